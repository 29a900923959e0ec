//! Each subcommand's examples: shown after its `--help` and in its man page's EXAMPLES,
//! from this one table (a test parses every example with the real command line).

/// An example: the command line, and what it answers.
pub struct Example {
    pub command: &'static str,
    pub answers: &'static str,
}

/// The examples of `subcommand` (a name as `irqlens SUBCOMMAND`, or `trial net`).
pub fn of(subcommand: &str) -> &'static [Example] {
    match subcommand {
        "noise" => &[
            Example {
                command: "irqlens noise -c 1-3 -d 10m",
                answers: "How much CPU time do interrupts, softirqs and other threads take from CPUs 1 to 3, and which of them?",
            },
            Example {
                command: "irqlens noise -c 3 -d 1m -s 100",
                answers: "Stop at the first noise of 100 µs or more and show its causes (exit status 2 when it happens).",
            },
            Example {
                command: "irqlens noise hist -c 3 -d 1m --warm-up 10 --no-header --no-index",
                answers: "The histogram of noise durations on CPU 3, as counts only, for a script.",
            },
            Example {
                command: "irqlens noise -c 1-3 -d 10m --record quiet.jsonl.gz",
                answers: "Record the run, to show it again with irqlens report or set it beside another with irqlens compare.",
            },
        ],
        "bh" => &[
            Example {
                command: "irqlens bh -d 30",
                answers: "How long do softirqs, tasklets, work items and IRQ threads wait to run, and what delayed them?",
            },
            Example {
                command: "irqlens bh -c 1 -t net --rate 1000 -d 10",
                answers: "The same for 1000 UDP datagrams a second that irqlens sends over a private veth pair to CPU 1.",
            },
        ],
        "wakeup" => &[
            Example {
                command: "irqlens wakeup -c 1 -d 10",
                answers: "From the timer interrupt to the woken thread running on CPU 1: how long, and in which steps?",
            },
            Example {
                command: "irqlens wakeup -c 3 -a 50",
                answers: "Stop at the first wakeup of 50 µs or more, record the run and show its causes (exit status 2).",
            },
        ],
        "account" => &[Example {
            command: "irqlens account -d 10",
            answers: "Which processes does interrupt work charge, and which did it serve?",
        }],
        "report" => &[
            Example {
                command: "irqlens report quiet.jsonl.gz",
                answers: "The tables of a recorded run, made again offline.",
            },
            Example {
                command: "irqlens report quiet.jsonl.gz loaded.jsonl.gz --html report.html",
                answers: "Two recordings in one HTML page with plots.",
            },
        ],
        "compare" => &[Example {
            command: "irqlens compare quiet.jsonl.gz loaded.jsonl.gz",
            answers: "The same measurement on two setups, side by side.",
        }],
        "advise" => &[
            Example {
                command: "irqlens advise quiet.jsonl.gz",
                answers: "For each cause a recording measured, the knob that takes it off.",
            },
            Example {
                command: "irqlens advise -c 1 -d 10",
                answers: "Measure CPU 1 with noise, then wakeup, 10 s each, then advise.",
            },
        ],
        "check" => &[
            Example {
                command: "irqlens check",
                answers: "Are the isolated CPUs ready for real-time tasks? A line per check, exit status 2 when one fails.",
            },
            Example {
                command: "irqlens check -c 2-3 --profile network --junit check.xml",
                answers: "The same for packet processing on CPUs 2 and 3, with a JUnit report for CI.",
            },
            Example {
                command: "irqlens check --profile hpc --show-profile",
                answers: "What the HPC profile checks, and its thresholds.",
            },
        ],
        "tune" => &[
            Example {
                command: "irqlens tune --cpus 1 --all",
                answers: "Try each remedy advise finds for CPU 1, measured before and after; keep what helped.",
            },
            Example {
                command: "irqlens tune --revert",
                answers: "Put back whatever a run that died left changed.",
            },
        ],
        "steer" => &[Example {
            command: "irqlens steer -d 60 --dry-run",
            answers: "Which bottom-half threads would take the priority of the processes they serve?",
        }],
        "trial" | "trial net" => &[
            Example {
                command: "irqlens trial net",
                answers: "Softirq, threaded and niced bottom halves under a UDP flood: throughput, latency and a real-time task's latency per rate.",
            },
            Example {
                command: "irqlens trial net --rates 10k,20k,40k,80k --designs stock,threaded-niced -d 2 --record trial-low.rec",
                answers: "Two designs at four rates, recorded to calibrate irqlens sim.",
            },
        ],
        "sim" => &[
            Example {
                command: "irqlens sim -d 2",
                answers: "What the example model's designs would do to its workload.",
            },
            Example {
                command: "irqlens sim --calibrate wakeup.rec bh.rec trial-low.rec -o vm.json",
                answers: "The simulation's costs, measured on this machine.",
            },
            Example {
                command: "irqlens sim --costs vm.json -d 2 --html sim.html",
                answers: "The designs simulated with those costs, as an HTML page.",
            },
        ],
        "agent" => &[
            Example {
                command: "irqlens agent",
                answers: "Serve bottom-half latency and interrupt time per workload on 0.0.0.0:9464, as /etc/irqlens/agent.toml says (SIGHUP reloads it).",
            },
            Example {
                command: "irqlens agent --config agent.toml --listen 127.0.0.1:9464 --no-bh",
                answers: "The same from another file, on loopback only, without bottom halves.",
            },
        ],
        _ => &[],
    }
}

/// The examples as `--help` shows them after the options.
pub fn help_text(subcommand: &str) -> Option<String> {
    let examples = of(subcommand);
    if examples.is_empty() {
        return None;
    }
    let mut text = String::from("Examples:\n");
    for example in examples {
        text.push_str(&format!(
            "  {}\n      {}\n",
            example.command, example.answers
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example is a command line irqlens accepts.
    #[test]
    fn every_example_parses() {
        let command = crate::cli::command();
        let names: Vec<String> = command
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        for name in &names {
            assert!(!of(name).is_empty(), "{name} has no example");
            for example in of(name) {
                let words: Vec<&str> = example.command.split_whitespace().collect();
                if let Err(err) = command.clone().try_get_matches_from(&words) {
                    panic!("{}: {err}", example.command);
                }
            }
        }
    }
}
