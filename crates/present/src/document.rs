//! What every command's run ends in: one document, shown as text or JSON on stdout and,
//! where the command has one, as an HTML page. The driver prints it; each command's
//! document says here how it looks.

use std::io::{self, Write};

use irqlens_model::agent::AgentReport;
use irqlens_model::run::{Comparison, RecordingSummary};
use irqlens_model::sim::{SimDocument, TrialComparison};
use irqlens_model::steer::SteerReport;
use irqlens_model::trial::TrialReport;
use irqlens_model::tune::{AdviceReport, TunePlan, TuneReport, TuneRevert};
use serde::Serialize;

use crate::html::Page;

/// A command's result as every output shows it.
pub trait Document {
    /// The `--json` document: one typed model struct, as serde writes it.
    fn json(&self) -> serde_json::Value;
    /// The text shown on stdout without `--json`.
    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()>;
    /// The lines about the run (what it traced and lost, what stopped it) shown after the
    /// text: on stdout, or on stderr when the text is data only.
    fn write_about(&self, _out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(())
    }
    /// Whether the text is data only, for a script (`hist --no-header`, as rtla's): then
    /// stdout holds it alone, and [`Document::write_about`]'s lines go to stderr.
    fn data_only(&self) -> bool {
        false
    }
    /// The `--html` page; `None` for a command that writes none.
    fn page(&self) -> Option<Page> {
        None
    }
    /// Its section of an HTML page, under `heading` (`report` puts several on one page).
    fn html(&self, _page: &mut Page, _heading: &str) {}
    /// Whether a stop threshold (`-s`, `-S`, `-i`) ended the run: it then exits with
    /// status 2, as rtla's do.
    fn threshold_hit(&self) -> bool {
        false
    }
}

/// A typed document as JSON: plain data always serializes.
pub fn to_json(document: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(document).expect("a document of plain data")
}

/// `document` as the whole of stdout: pretty JSON and a newline.
pub fn write_json(out: &mut dyn Write, document: &serde_json::Value) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, document)?;
    writeln!(out)
}

/// A page of `document` alone, titled `title`, for a run on `kernel`.
pub fn page_of(document: &dyn Document, title: &str, kernel: &str) -> Page {
    let mut page = Page::new(title, kernel);
    document.html(&mut page, title);
    page
}

/// One recording's document among others (`irqlens report A B`).
pub struct Section {
    /// The line that says which run it was.
    pub heading: String,
    /// Where it comes from, added to its JSON document.
    pub recording: RecordingSummary,
    /// The kernel it was measured on.
    pub kernel: String,
    /// What it shows.
    pub document: Box<dyn Document>,
}

impl Section {
    /// Its JSON document: the run's, with where it comes from.
    pub fn json(&self) -> serde_json::Value {
        let mut document = self.document.json();
        document["recording"] = to_json(&self.recording);
        document
    }
}

/// Recordings shown one after the other, each under its heading: a JSON array, and
/// one HTML page with a section each.
pub struct Sections(pub Vec<Section>);

impl Document for Sections {
    fn json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.0.iter().map(Section::json).collect())
    }

    /// Each section under its heading, or, when every one is data only, their data
    /// alone (the headings are then said with the lines about each run).
    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let data_only = self.data_only();
        for (index, section) in self.0.iter().enumerate() {
            if data_only {
                section.document.write_text(out)?;
                continue;
            }
            if index > 0 {
                writeln!(out)?;
            }
            writeln!(out, "# {}", section.heading)?;
            section.document.write_text(out)?;
            section.document.write_about(out)?;
        }
        Ok(())
    }

    fn write_about(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        if !self.data_only() {
            return Ok(());
        }
        for section in &self.0 {
            writeln!(out, "# {}", section.heading)?;
            section.document.write_about(out)?;
        }
        Ok(())
    }

    fn data_only(&self) -> bool {
        self.0.iter().all(|section| section.document.data_only())
    }

    /// The kernels the recordings were made on, not this machine's.
    fn page(&self) -> Option<Page> {
        let mut kernels: Vec<&str> = self.0.iter().map(|s| s.kernel.as_str()).collect();
        kernels.sort_unstable();
        kernels.dedup();
        let mut page = Page::new("irqlens report", &kernels.join(", "));
        for section in &self.0 {
            section.document.html(&mut page, &section.heading);
        }
        Some(page)
    }
}

/// Two recordings of one measurement side by side (`irqlens compare A B`).
pub struct Compared {
    /// The figures and both runs' documents.
    pub comparison: Comparison<serde_json::Value, serde_json::Value>,
    /// The lines that say which runs A and B were.
    pub headings: [String; 2],
}

impl Document for Compared {
    fn json(&self) -> serde_json::Value {
        to_json(&self.comparison)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let [a, b] = &self.headings;
        Ok(crate::compare::write_table(
            out,
            &self.comparison.figures,
            a,
            b,
        )?)
    }
}

impl Document for SteerReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::steer::write_summary(out, self)?)
    }
}

impl Document for AgentReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    /// How long it served, and how each capability went.
    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let served = std::time::Duration::from_secs(self.elapsed_ns / 1_000_000_000);
        writeln!(
            out,
            "irqlens agent served http://{}/metrics for {}; {} configuration reload(s), {} refused",
            self.listen,
            humantime::format_duration(served),
            self.config_reloads,
            self.refused_reloads
        )?;
        for capability in &self.capabilities {
            writeln!(
                out,
                "  {:<8} started {} time(s), failed {} time(s), {} at the end",
                capability.name,
                capability.starts,
                capability.failures,
                if capability.running_at_end {
                    "running"
                } else {
                    "not running"
                }
            )?;
        }
        Ok(())
    }
}

impl Document for TrialReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::trial::write_text(out, self)?)
    }

    fn page(&self) -> Option<Page> {
        Some(trial_page(self, TRIAL_TITLE))
    }
}

const TRIAL_TITLE: &str = "irqlens trial net";

fn trial_page(report: &TrialReport, heading: &str) -> Page {
    let mut page = Page::new(TRIAL_TITLE, &report.kernel);
    page.trial(heading, report);
    page
}

/// A trial read back from its recording (`irqlens report FILE`): the run's document,
/// headed by the file it came from.
pub struct RecordedTrial {
    /// The recording's name.
    pub file: String,
    /// What it holds.
    pub report: TrialReport,
}

impl Document for RecordedTrial {
    fn json(&self) -> serde_json::Value {
        self.report.json()
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        writeln!(
            out,
            "# {}: {TRIAL_TITLE}, kernel {}",
            self.file, self.report.kernel
        )?;
        self.report.write_text(out)
    }

    fn page(&self) -> Option<Page> {
        Some(trial_page(
            &self.report,
            &format!("{}: {TRIAL_TITLE}", self.file),
        ))
    }
}

impl Document for SimDocument {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::sim::write_report(out, &self.report)?)
    }

    fn page(&self) -> Option<Page> {
        let mut page = Page::new("irqlens sim", "simulated");
        page.sim("irqlens sim", &self.report);
        Some(page)
    }
}

impl Document for TrialComparison {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::sim::write_comparison(out, self)?)
    }
}

/// A document that is a file for another command (a sim model, a calibration): JSON however
/// it is shown.
pub struct JsonFile<T>(pub T);

impl<T: Serialize> Document for JsonFile<T> {
    fn json(&self) -> serde_json::Value {
        to_json(&self.0)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(write_json(out, &self.json())?)
    }

    /// A file for a program: never wrapped to the terminal.
    fn data_only(&self) -> bool {
        true
    }
}

impl Document for TuneReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::tune::write_text(out, self)?)
    }
}

impl Document for TunePlan {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::tune::write_plan(out, self)?)
    }
}

impl Document for TuneRevert {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::tune::write_revert(out, self)?)
    }
}

/// What a run wrote to the file it was told to (`sim --calibrate -o FILE`): nothing is left
/// for stdout.
pub struct WrittenTo;

impl Document for WrittenTo {
    fn json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    fn write_text(&self, _out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(())
    }
}

/// `irqlens advise`'s remedies, with how many rows of causes the text shows.
pub struct Advised {
    /// The remedies and the machine's state.
    pub report: AdviceReport,
    /// Rows of causes in the text (`--causes`).
    pub rows: usize,
}

impl Document for Advised {
    fn json(&self) -> serde_json::Value {
        to_json(&self.report)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::advise::write_text(out, &self.report, self.rows)?)
    }
}

impl Document for irqlens_model::check::CheckReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::check::write_text(out, self)?)
    }

    /// A failed check exits with status 2, as a threshold hit does.
    fn threshold_hit(&self) -> bool {
        self.verdict() == irqlens_model::check::Status::Fail
    }
}

impl Document for irqlens_model::check::ProfileReport {
    fn json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        Ok(crate::check::write_profile(out, self)?)
    }
}
