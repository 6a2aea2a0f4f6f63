//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod checkpoints;
pub mod ctl;
pub mod explain;
pub mod rewritten;
pub mod run;
pub mod udf;
