//! `irqlens compare A B`: two recordings of one measurement, side by side.

use anyhow::{Result, bail};

use super::report::section;
use crate::cli::{CompareArgs, ShowArgs};
use crate::driver::{Done, Run, Tool};
use crate::measure::replay;
use irqlens_present::compare;
use irqlens_present::document::Compared;

impl Tool for CompareArgs {
    const NAME: &'static str = "compare";
    const STOPS_AT_SIGNAL: bool = false;

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        let (reader_a, a) = replay(&self.baseline)?;
        let (reader_b, b) = replay(&self.other)?;
        let (capability_a, capability_b) =
            (reader_a.header().capability, reader_b.header().capability);
        if capability_a != capability_b {
            bail!(
                "{} is a {} recording and {} a {} one: compare two runs of one measurement",
                reader_a.name(),
                capability_a.name(),
                reader_b.name(),
                capability_b.name()
            );
        }
        let (figures_a, figures_b) = (a.figures(), b.figures());
        let rows = compare::rows(&figures_a, &figures_b);
        let (a, b) = (section(&reader_a, a), section(&reader_b, b));
        Ok(Done::new(Compared {
            comparison: compare::comparison(&rows, a.json(), b.json()),
            headings: [a.heading, b.heading],
        }))
    }
}
