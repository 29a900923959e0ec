//! irqlens sim against this machine: calibrated from recordings made here (wakeup, bh
//! with NET_RX, a trial at low rates and three flood rates), the simulated `trial net`
//! test bed must stop following the offered rate where a second, independent trial does
//! (within what the machine's noise moves that trial's knee between its rounds), and echo
//! within 25% of it at that trial's top rate, past the knee (widened by its rounds'
//! spread), for `stock` and `threaded-niced`. The figures (knee, peak, median latency)
//! are printed: the closing note reports them. Needs root (CI runs as root).

use std::fs;
use std::time::Duration;

use crate::common::*;
use irqlens_collect::system::cpu_times;

/// The ladders: the calibration's has points below the knee (80k to 160k/s on CPU 1 of
/// the test VM), which give the per-datagram costs, and three past it, which give the
/// bottom half's cost in a flood (a point that did not echo 95% is left out of the
/// first fit and makes the second; with two, 640k and 1M/s, whose echo rates are alike,
/// a run split it 2.3 µs an echo and 0.3 a drop, where three rounds of three rates give
/// 0.8 and 0.6); the checked one crosses the knee.
const CALIBRATION_RATES: &str = "10k,20k,40k,80k,320k,640k,1M";
const CHECKED_RATES: [u64; 5] = [20_000, 40_000, 80_000, 160_000, 320_000];
const DESIGNS: &str = "stock,threaded-niced";
/// The checked trial's rounds: its knee is where most of them follow, and how far apart
/// their own knees fall is the machine's noise in rungs of the ladder.
const CHECKED_ROUNDS: &str = "3";

/// A knee's place on the checked ladder: 0 below the lowest rate (followed at none), then
/// 1 for the lowest and so on.
fn rung(knee: Option<u64>) -> usize {
    knee.map_or(0, |pps| {
        1 + CHECKED_RATES
            .iter()
            .position(|&rate| rate == pps)
            .unwrap_or_else(|| panic!("{pps}/s is not a rate of the ladder"))
    })
}

/// The share of CPU 1 (0 to 1) that work other than the test's kept busy over a second in
/// which nothing of the test runs: /proc/stat's user, system, irq and softirq time against
/// its total (the hypervisor's steal is not counted: it is noise the test must bear).
fn others_busy_share() -> f64 {
    let before = cpu_times(1).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let after = cpu_times(1).unwrap();
    let busy = |t: &irqlens_analyze::trial::CpuTimes| t.user + t.system + t.irq + t.softirq;
    let total = |t: &irqlens_analyze::trial::CpuTimes| busy(t) + t.idle + t.steal;
    (busy(&after) - busy(&before)) as f64 / (total(&after) - total(&before)).max(1) as f64
}

/// About 170 s: a wakeup and a bh recording of 3 s, then two trials (14 points of 2 s, and
/// 3 rounds of 10 points of 1 s, each after 0.5 s of warm-up).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_calibrated_simulation_stops_following_where_trial_does() {
    assert_root();
    let path = |name: &str| temp_path(name).to_string_lossy().into_owned();
    let (wakeup, bh, calibration_trial, checked_trial, calibration) = (
        path("sim-wakeup.rec"),
        path("sim-bh.rec"),
        path("sim-trial-low.rec"),
        path("sim-trial.rec"),
        path("sim-calibration.json"),
    );
    irqlens_ok(&["wakeup", "-c", "1", "-d", "3", "-q", "--record", &wakeup]);
    irqlens_ok(&[
        "bh", "-c", "1", "-t", "net", "--rate", "1000", "-d", "3", "-q", "--record", &bh,
    ]);
    let checked_rates = CHECKED_RATES.map(|rate| rate.to_string()).join(",");
    // the model has the test bed's load alone: other work that keeps CPU 1 busy (other
    // builds on a shared VM) enters a trial's busy time, hence the calibrated bottom
    // half, and the knee cannot be judged then
    let mut others_busy = Vec::new();
    for (rates, rounds, seconds, record) in [
        (CALIBRATION_RATES, "1", "2", &calibration_trial),
        (checked_rates.as_str(), CHECKED_ROUNDS, "1", &checked_trial),
    ] {
        others_busy.push(others_busy_share());
        irqlens_ok(&[
            "trial",
            "net",
            "--rates",
            rates,
            "--designs",
            DESIGNS,
            "--rounds",
            rounds,
            "-d",
            seconds,
            "-q",
            "--record",
            record,
        ]);
    }
    eprintln!("other work's share of CPU 1 before each trial: {others_busy:.2?}");
    irqlens_ok(&[
        "sim",
        "--calibrate",
        &wakeup,
        &bh,
        &calibration_trial,
        "-o",
        &calibration,
    ]);
    let written = fs::read(&calibration).unwrap();
    assert_valid_document(&written);
    let file: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let origin = file["costs"]["origin"].as_str().unwrap();
    for cost in [
        "softirq_per_packet from",
        "context_switch from",
        "wakeup from",
    ] {
        assert!(origin.contains(cost), "{cost} in {origin}");
    }
    let trial_costs = file["trial"].as_array().unwrap();
    assert_eq!(trial_costs.len(), 2, "{file:#}");
    let calibration_points = irqlens_json(&["report", &calibration_trial])["points"].clone();
    for costs in trial_costs {
        eprintln!("calibrated {costs}");
        let consumer = costs["consumer_per_datagram_us"].as_f64().unwrap();
        // an echo is a receive and a send system call: some time, and no more than the
        // CPU had: at the most the calibration trial echoed, the echo server's share of
        // CPU 1 cannot pass the whole of it (a stalled VM scatters the fit between these)
        let points: Vec<&serde_json::Value> = calibration_points
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["design"] == costs["design"])
            .collect();
        let most_echoed = points
            .iter()
            .map(|p| p["echoed_pps"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(consumer > 0.0, "{costs}");
        // the flood points are past any knee this bed has had (80k to 320k/s)
        assert!(
            costs["bottom_half_flood_per_datagram_us"].as_f64() > Some(0.0),
            "no flood cost: {costs}"
        );
        // the bound holds for a fit from exact busy times, which trial records with or
        // without cpuidle; a recording without them (older) falls back to the ticks,
        // which a stalled VM scatters past it
        let exact = points.iter().all(|p| p["runtimes"]["busy_ns"].is_u64());
        assert!(
            !exact || consumer * most_echoed < 1e6,
            "{most_echoed:.0}/s echoed at most: {costs}"
        );
    }

    let compared = irqlens_json(&["sim", "--against", &checked_trial, "--costs", &calibration]);
    for design in compared["designs"].as_array().unwrap() {
        eprintln!("trial vs sim: {design}");
        let knee = |key: &str| design[key].as_u64();
        let (measured, simulated) = (
            knee("measured_follows_up_to_pps"),
            knee("simulated_follows_up_to_pps"),
        );
        // the rungs the machine's noise put the knee on: the rounds' own knees and theirs
        // together
        let by_round: Vec<Option<u64>> = design["measured_follows_up_to_by_round_pps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|knee| knee.as_u64())
            .collect();
        assert_eq!(by_round.len(), 3, "{design}");
        let measured_rungs = by_round.iter().chain([&measured]).map(|&k| rung(k));
        let (lowest, highest) = (
            measured_rungs.clone().min().unwrap(),
            measured_rungs.max().unwrap(),
        );
        // the model puts it within one rung of the ladder (which doubles) of where the
        // machine did
        let within = rung(simulated) + 1 >= lowest && rung(simulated) <= highest + 1;
        if others_busy.iter().any(|&share| share > 0.5) {
            eprintln!(
                "knee not judged (simulated {simulated:?}/s, measured {measured:?}/s, rounds \
                 {by_round:?}; within its bound: {within}): other work kept CPU 1 busy \
                 {others_busy:.2?} of the second before each trial"
            );
            continue;
        }
        assert!(
            within,
            "knee: simulated {simulated:?}/s against measured {measured:?}/s, rounds \
             {by_round:?}: {design}"
        );
    }
    let points = compared["points"].as_array().unwrap();
    for point in points {
        eprintln!(
            "{} {} round {}: echoed {:.0} sim {:.0}; p50 {} sim {} us",
            point["design"],
            point["offered_pps"],
            point["round"],
            point["measured_echoed_pps"].as_f64().unwrap(),
            point["simulated_echoed_pps"].as_f64().unwrap(),
            point["measured_p50_us"],
            point["simulated_p50_us"],
        );
    }
    // at the top rate, past the knee, the echo rate: the median of the simulated rounds
    // within 25% of the measured rounds' median, widened by how far those rounds spread
    // (issue 32's aim, with the machine's noise of this run)
    let top_rate = CHECKED_RATES[CHECKED_RATES.len() - 1];
    for design in DESIGNS.split(',') {
        let figure = |key: &str| compared_rounds(&compared, design, top_rate, key);
        let (measured, simulated) = (
            figure("measured_echoed_pps"),
            figure("simulated_echoed_pps"),
        );
        assert_eq!(measured.len(), 3, "{design} at {top_rate}/s: {compared:#}");
        let (measured_median, spread) = median_and_spread(&measured);
        let error = (median_and_spread(&simulated).0 - measured_median).abs();
        let allowed = 0.25 * measured_median + spread;
        let line = format!(
            "{design} at {top_rate}/s: echoed {measured:.0?}, simulated {simulated:.0?}: off by \
             {error:.0}/s, allowed {allowed:.0}"
        );
        eprintln!("{line}");
        if others_busy.iter().all(|&share| share <= 0.5) {
            assert!(error <= allowed, "{line}");
        }
    }

    // the calibration drives a model of one's own: the six designs, costs from here
    let simulated = irqlens_json(&["sim", "--costs", &calibration, "-d", "200ms"]);
    assert_eq!(simulated["designs"].as_array().unwrap().len(), 6);
    assert!(
        simulated["costs_origin"]
            .as_str()
            .unwrap()
            .starts_with("calibrated"),
        "{simulated}"
    );
    for file in [wakeup, bh, calibration_trial, checked_trial, calibration] {
        let _ = fs::remove_file(file);
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}
