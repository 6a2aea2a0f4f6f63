//! One module per subcommand.

pub mod check;
pub mod explain;
pub mod run;
