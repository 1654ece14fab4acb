//! The plan: the budget bar (chain, budget, algorithm, bandwidth, the
//! plan's status), the notes when the plan on screen is not the controls',
//! the three figures of the schedule (the kit's charts wired to the page's
//! state) and the step-through with the page's legend.

mod bar;
mod figures;
mod stale;
mod stepper;

pub use bar::{install_drop, BudgetPanel, Header, NoticeBar};
pub use figures::{ChainCard, MemoryCard, TimelinesCard};
pub use stale::{ImportedNote, StaleNote};
pub use stepper::Stepper;
