//! `irqlens account`: live, or replayed from a recording.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;

use super::{Outcome, STOP, close_tap, open_tap, with_progress};
use crate::cli::AccountArgs;
use irqlens_analyze::account::Period;
use irqlens_collect::account as account_run;
use irqlens_collect::system;
use irqlens_model::account::{AccountOptions, AccountRunInfo};
use irqlens_model::system::Capability;
use irqlens_present::account::{self as show, View};
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_record::Reader;

/// An account run's result and how it was asked to be shown.
pub struct AccountResult {
    args: AccountArgs,
    options: AccountOptions,
    whole: Period,
    info: AccountRunInfo,
    /// Each `--interval` report, as JSON, and as text unless already printed.
    periods_json: Vec<serde_json::Value>,
    periods_text: Vec<u8>,
    irq_names: HashMap<u32, String>,
}

impl AccountResult {
    fn view(&self) -> View<'_> {
        view(&self.args, &self.irq_names)
    }
}

fn view<'a>(args: &AccountArgs, irq_names: &'a HashMap<u32, String>) -> View<'a> {
    View {
        by_thread: args.threads,
        top: args.top,
        irq_names,
    }
}

/// The `--interval` reports of a run: JSON kept, text printed as they come (live) or
/// kept for later (replay).
struct Periods<'a> {
    options: &'a AccountOptions,
    view: View<'a>,
    json: Vec<serde_json::Value>,
    text: Vec<u8>,
}

impl Periods<'_> {
    fn add(&mut self, period: &Period, out: Option<&mut dyn Write>) {
        let losses = period.losses();
        self.json
            .push(show::period_json(period, &self.view, &losses));
        let out = out.unwrap_or(&mut self.text);
        let _ = show::write_period(out, period, self.options, &self.view, &losses)
            .and_then(|()| writeln!(out));
    }
}

pub fn measure(args: AccountArgs) -> Result<()> {
    let options = args.options()?;
    let mut tap = open_tap(&args.output, Capability::Account, &options.cpus, None)?;
    let irq_names = system::irq_line_names();
    let mut periods = Periods {
        options: &options,
        view: view(&args, &irq_names),
        json: Vec::new(),
        text: Vec::new(),
    };
    let (whole, mut info) = with_progress(
        args.output.progress(),
        options.duration,
        "checkpoints",
        |show| {
            account_run::run(&options, &STOP, &mut tap, show, |period| {
                // a report per interval, as it comes
                let mut stdout = io::stdout().lock();
                periods.add(period, (!args.output.json).then_some(&mut stdout as _));
            })
        },
    )?;
    info.interrupted = super::interrupted();
    let recorded = close_tap(tap, &info);
    let result = AccountResult {
        periods_json: periods.json,
        options,
        whole,
        info,
        periods_text: Vec::new(),
        irq_names,
        args,
    };
    super::print(&result, &result.args.output, "irqlens account")?;
    recorded
}

pub fn replay(args: AccountArgs, reader: &mut Reader) -> Result<AccountResult> {
    let options = args.options_on(reader.header().cpus.clone())?;
    // the live run names IRQ lines before it starts
    let irq_names = irqlens_model::kernel::parse_irq_line_names(&reader.header().system.interrupts);
    let mut periods = Periods {
        options: &options,
        view: view(&args, &irq_names),
        json: Vec::new(),
        text: Vec::new(),
    };
    let (whole, info) = account_run::replay(&options, reader, |period| periods.add(period, None))?;
    Ok(AccountResult {
        periods_json: periods.json,
        periods_text: periods.text,
        options,
        whole,
        info,
        irq_names,
        args,
    })
}

impl Outcome for AccountResult {
    fn json(&self) -> serde_json::Value {
        show::to_json(
            &self.whole,
            &self.periods_json,
            &self.info,
            &self.options,
            &self.view(),
        )
    }

    fn write_text(&self, out: &mut dyn Write) -> Result<()> {
        out.write_all(&self.periods_text)?;
        let losses = self.info.losses();
        show::write_period(out, &self.whole, &self.options, &self.view(), &losses)?;
        show::write_run_info(out, &self.info)?;
        Ok(())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        page.account(heading, &self.whole, &self.info, &self.view());
    }

    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.whole, &self.view())
    }
}
