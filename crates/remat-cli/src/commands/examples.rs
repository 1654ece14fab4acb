//! `remat examples`: the built-in chains, listed or written as `remat-chain/1`.

use crate::args::ExamplesArgs;
use crate::error::{CliError, Result};
use crate::input;
use remat_core::examples;
use remat_core::format::write_chain;

pub fn run(a: &ExamplesArgs) -> Result<()> {
    let Some(name) = &a.write else {
        let width = examples::names().map(str::len).max().unwrap_or(0);
        for e in examples::EXAMPLES {
            say!("example:{:<width$}  {}", e.name, e.about);
        }
        return Ok(());
    };
    let name = name.strip_prefix("example:").unwrap_or(name);
    let chain = input::example(name).map_err(|e| CliError::Flag {
        flag: "--write",
        source: Box::new(e),
    })?;
    input::write_or_print(a.output.as_deref(), &write_chain(&chain))
}
