//! irqlens's integration tests, in one binary: the command line (`*_cli`, no root) and
//! runs against injected ground truth (`*_root`, marked `#[ignore]` with the reason:
//! `cargo test` skips them unless root runs them with `-- --ignored`, as scripts/test
//! does).

mod account_cli;
mod account_root;
mod advise_cli;
mod advise_root;
mod agent_cli;
mod agent_root;
mod bh_cli;
mod bh_root;
mod cgroup_root;
mod check_cli;
mod check_root;
mod chromium;
mod common;
mod fixtures;
mod fuzz_cli;
mod generate_cli;
mod html_cli;
mod html_root;
mod noise_cli;
mod noise_root;
mod pandas_cli;
mod perfetto_root;
mod plots_cli;
mod prometheus_cli;
mod prometheus_root;
mod record_cli;
mod record_root;
mod rtla_cli;
mod rtla_root;
mod sim_cli;
mod sim_root;
mod steer_cli;
mod steer_root;
mod storm_root;
mod trial_cli;
mod trial_root;
mod tune_cli;
mod tune_root;
mod wakeup_cli;
mod wakeup_root;
mod width_cli;
mod workload_noise_root;
mod workload_root;
