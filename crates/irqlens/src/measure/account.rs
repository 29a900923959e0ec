//! `irqlens account`: interrupt time per process (Zhang & West), live or replayed.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;
use irqlens_analyze::account::Period;
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::account as account_run;
use irqlens_collect::{Tick, system};
use irqlens_model::account::{AccountOptions, AccountRunInfo};
use irqlens_model::kernel::parse_irq_line_names;
use irqlens_model::options::RunOptions;
use irqlens_model::run::RunInfo;
use irqlens_model::tables::AccountPeriod;
use irqlens_model::workload::WorkloadBy;
use irqlens_present::account::{self as show, View};
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::terminal::Printable;
use irqlens_record::Reader;

use super::{Live, Measure, Outcome};
use crate::driver::STOP;
use irqlens_present::document::Document;

pub struct AccountTool;

/// An account run's result and how it is shown.
pub struct AccountResult {
    /// The kernel release the run was measured on.
    kernel: String,
    options: AccountOptions,
    whole: Period,
    info: AccountRunInfo,
    /// Each `--interval` report, as JSON, and as text unless already printed.
    periods_json: Vec<AccountPeriod>,
    periods_text: Vec<u8>,
    irq_names: HashMap<u32, String>,
}

impl AccountResult {
    fn view(&self) -> View<'_> {
        view(&self.options, &self.irq_names)
    }
}

fn view<'a>(options: &'a AccountOptions, irq_names: &'a HashMap<u32, String>) -> View<'a> {
    View {
        by_thread: options.threads,
        top: options.top,
        irq_names,
        by: options.by,
        within: &options.cgroups,
        sockets: options.sockets,
    }
}

/// The `--interval` reports of a run: JSON kept, text printed as they come (live) or
/// kept for later (replay).
struct Periods<'a> {
    options: &'a AccountOptions,
    view: View<'a>,
    json: Vec<AccountPeriod>,
    text: Vec<u8>,
}

impl<'a> Periods<'a> {
    fn new(options: &'a AccountOptions, irq_names: &'a HashMap<u32, String>) -> Self {
        Periods {
            options,
            view: view(options, irq_names),
            json: Vec::new(),
            text: Vec::new(),
        }
    }

    fn add(&mut self, period: &Period, out: Option<&mut dyn Write>) {
        let losses = period.losses();
        self.json
            .push(show::period_json(period, &self.view, &losses));
        let out = out.unwrap_or(&mut self.text);
        let _ = show::write_period(out, period, self.options, &self.view, &losses)
            .and_then(|()| writeln!(out));
    }
}

impl Measure for AccountTool {
    const NAME: &'static str = "account";
    type Options = AccountOptions;
    type Result = AccountResult;
    const COUNTING: &'static str = "checkpoints";

    fn recorded(options: &AccountOptions) -> RunOptions {
        RunOptions::Account(options.clone())
    }

    fn run(options: AccountOptions, live: &mut Live<'_>) -> Result<AccountResult> {
        let irq_names = system::irq_line_names();
        let mut periods = Periods::new(&options, &irq_names);
        let json = live.output.show.json;
        let exporter = &mut *live.exporter;
        let progress = &mut *live.progress;
        // the pods, unless --by says which level (its fallbacks name the rest)
        let by = options.by.unwrap_or(WorkloadBy::Pod);
        let on_tick = |tick: Tick, mut so_far: account_run::SoFar<'_>| {
            exporter.account(|| so_far.ledger_and_cgroups(), by, &tick.lost);
            progress(tick.elapsed, so_far.events());
        };
        let (whole, info) = account_run::run(&options, &STOP, live.tap, on_tick, |period| {
            // a report per interval, as it comes
            let mut stdout = Printable(io::stdout().lock());
            periods.add(period, (!json).then_some(&mut stdout as _));
        })?;
        let periods_json = periods.json;
        Ok(AccountResult {
            kernel: system::kernel_release(),
            periods_json,
            periods_text: Vec::new(),
            options,
            whole,
            info,
            irq_names,
        })
    }

    fn replay(options: AccountOptions, reader: &mut Reader) -> Result<AccountResult> {
        // the live run names IRQ lines before it starts
        let irq_names = parse_irq_line_names(&reader.header().system.interrupts);
        let mut periods = Periods::new(&options, &irq_names);
        let (whole, info) =
            account_run::replay(&options, reader, |period| periods.add(period, None))?;
        let (periods_json, periods_text) = (periods.json, periods.text);
        Ok(AccountResult {
            kernel: reader.header().system.kernel_release.clone(),
            periods_json,
            periods_text,
            options,
            whole,
            info,
            irq_names,
        })
    }
}

impl Document for AccountResult {
    fn json(&self) -> serde_json::Value {
        let tables = show::to_json(
            &self.whole,
            &self.periods_json,
            &self.info,
            &self.options,
            &self.view(),
        );
        let recorded = AccountTool::recorded(&self.options);
        super::measurement_json(&recorded, &self.kernel, &self.info, tables)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        out.write_all(&self.periods_text)?;
        let losses = self.info.losses();
        show::write_period(out, &self.whole, &self.options, &self.view(), &losses)?;
        Ok(())
    }

    fn write_about(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(show::write_run_info(out, &self.info, &self.view())?)
    }

    fn html(&self, page: &mut Page, heading: &str) {
        page.account(heading, &self.whole, &self.info, &self.view());
    }

    fn page(&self) -> Option<Page> {
        Some(super::page::<AccountTool>(self))
    }
}

impl Outcome for AccountResult {
    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.whole, &self.view())
    }

    fn run_info(&mut self) -> &mut dyn RunInfo {
        &mut self.info
    }

    fn costs(&self) -> Vec<irqlens_model::sim::MeasuredCost> {
        irqlens_analyze::sim::calibrate::account_costs(&self.whole.ledger)
    }

    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        Some(irqlens_analyze::advise::account_causes(
            &self.whole.ledger,
            &self.irq_names,
        ))
    }

    fn kernel(&self) -> &str {
        &self.kernel
    }
}
