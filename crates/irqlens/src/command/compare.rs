//! `irqlens compare A B`: two recordings of one measurement, side by side.

use anyhow::{Result, bail};

use super::report::{document, heading};
use super::{print_json, replay};
use crate::cli::CompareArgs;
use irqlens_present::compare;

pub fn run(args: &CompareArgs) -> Result<()> {
    let (reader_a, a) = replay(&args.baseline)?;
    let (reader_b, b) = replay(&args.other)?;
    let (capability_a, capability_b) = (reader_a.header().capability, reader_b.header().capability);
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
    let mut out = std::io::stdout().lock();
    if args.json {
        let document = compare::to_json(
            &rows,
            document(&reader_a, a.as_ref()),
            document(&reader_b, b.as_ref()),
        );
        return print_json(&mut out, &document);
    }
    compare::write_table(&mut out, &rows, &heading(&reader_a), &heading(&reader_b))?;
    Ok(())
}
