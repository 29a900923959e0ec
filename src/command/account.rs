//! `irqlens account`: live, or replayed from a recording.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;

use super::{Outcome, STOP, close_tap, open_tap, with_progress};
use irqlens::cli::AccountArgs;
use irqlens::collect::account::{self as account_run, AccountOptions, AccountRunInfo, Period};
use irqlens::present::account::{self as show, View};
use irqlens::present::compare::Figure;
use irqlens::present::html::Page;
use irqlens::record::{Capability, Reader};
use irqlens::system;

/// An account run's result and how it was asked to be shown.
pub struct AccountResult {
    args: AccountArgs,
    options: AccountOptions,
    whole: Period,
    info: AccountRunInfo,
    /// Each `--interval` report, as compact JSON text (when JSON may be asked for), and
    /// as text unless already printed.
    periods_json: Vec<String>,
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

/// The `--interval` reports of a run. Only what may be shown is kept: the JSON document
/// holds every period (kept as compact text: a `Value` takes several times the memory);
/// the text is printed as it comes (live) or kept for later (replay).
struct Periods<'a> {
    options: &'a AccountOptions,
    view: View<'a>,
    json: Option<Vec<String>>,
    text: Option<Vec<u8>>,
    print: bool,
}

impl Periods<'_> {
    fn add(&mut self, period: &Period) {
        if let Some(json) = &mut self.json {
            json.push(show::period_json(period, &self.view).to_string());
        }
        let mut stdout;
        let out: &mut dyn Write = match (&mut self.text, self.print) {
            (Some(text), _) => text,
            (None, true) => {
                stdout = io::stdout().lock();
                &mut stdout
            }
            (None, false) => return,
        };
        let _ =
            show::write_period(out, period, self.options, &self.view).and_then(|()| writeln!(out));
    }
}

pub fn measure(args: AccountArgs) -> Result<()> {
    let options = args.options()?;
    let mut tap = open_tap(&args.output, Capability::Account, &options.cpus, None)?;
    let irq_names = system::irq_line_names();
    let json = args.output.json;
    let mut periods = Periods {
        options: &options,
        view: view(&args, &irq_names),
        json: json.then(Vec::new),
        text: None,
        print: !json,
    };
    let (whole, mut info) = with_progress(
        args.output.progress(),
        options.duration,
        "checkpoints",
        |show| {
            account_run::run(&options, &STOP, &mut tap, show, |period| {
                periods.add(period)
            })
        },
    )?;
    info.interrupted = super::interrupted();
    let recorded = close_tap(tap, &info);
    let result = AccountResult {
        periods_json: periods.json.unwrap_or_default(),
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
    let irq_names = system::parse_irq_line_names(&reader.header().system.interrupts);
    // `irqlens report` decides between JSON and text, not the recorded options
    let mut periods = Periods {
        options: &options,
        view: view(&args, &irq_names),
        json: Some(Vec::new()),
        text: Some(Vec::new()),
        print: false,
    };
    let (whole, info) = account_run::replay(&options, reader, |period| periods.add(period))?;
    Ok(AccountResult {
        periods_json: periods.json.unwrap_or_default(),
        periods_text: periods.text.unwrap_or_default(),
        options,
        whole,
        info,
        irq_names,
        args,
    })
}

impl Outcome for AccountResult {
    fn json(&self) -> serde_json::Value {
        let periods: Vec<serde_json::Value> = self
            .periods_json
            .iter()
            .map(|period| serde_json::from_str(period).expect("made by serde_json"))
            .collect();
        show::to_json(
            &self.whole,
            &periods,
            &self.info,
            &self.options,
            &self.view(),
        )
    }

    fn write_text(&self, out: &mut dyn Write) -> Result<()> {
        out.write_all(&self.periods_text)?;
        show::write_period(out, &self.whole, &self.options, &self.view())?;
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
