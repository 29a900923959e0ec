//! The agent's log: one structured line per event on stderr (tracing's fmt: time, level,
//! message, then `key=value` fields), its level set by the configuration and changed by a
//! reload. Only the agent logs so; the other subcommands keep their own output.

use irqlens_model::agent::LogLevel;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt;

/// The installed log, whose level a reload changes.
pub struct Log {
    level: reload::Handle<LevelFilter, tracing_subscriber::Registry>,
}

fn filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Off => LevelFilter::OFF,
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Trace => LevelFilter::TRACE,
    }
}

impl Log {
    /// Logs at `level` on stderr from now on.
    pub fn install(level: LogLevel) -> Log {
        let (filter, handle) = reload::Layer::new(filter(level));
        let lines = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_target(false);
        // a second install (none is made) would keep the first
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(lines)
            .try_init();
        Log { level: handle }
    }

    /// Logs at `level` from now on.
    pub fn set_level(&self, level: LogLevel) {
        let _ = self.level.reload(filter(level));
    }
}
