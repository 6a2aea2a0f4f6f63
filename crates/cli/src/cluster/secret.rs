//! The cluster's shared secret: every process of a cluster proves it knows it (an HMAC of a
//! fresh challenge, see `anduin_wire::auth`) before the coordinator or a channel listener
//! takes anything from it. Without one, every listener binds to loopback only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

/// The environment variable that holds the secret when no file is given (and through which
/// a worker hands it to its executors).
pub const ENV: &str = "ANDUIN_CLUSTER_SECRET";

/// The secret's flag, shared by every cluster command.
#[derive(Args, Debug, Clone, Default)]
pub struct SecretArgs {
    /// A file holding the cluster's shared secret (its first line; or the environment
    /// variable ANDUIN_CLUSTER_SECRET). Needed to listen beyond loopback.
    #[arg(long, value_name = "FILE")]
    pub cluster_secret_file: Option<PathBuf>,
}

impl SecretArgs {
    /// The secret, if there is one.
    pub fn load(&self) -> Result<Option<Arc<[u8]>>> {
        load(self.cluster_secret_file.as_deref())
    }
}

/// The secret from `file`, or from the environment.
pub fn load(file: Option<&Path>) -> Result<Option<Arc<[u8]>>> {
    let text = match file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("cannot read the cluster secret file `{}`", f.display()))?,
        None => match std::env::var(ENV) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        },
    };
    let secret = text.lines().next().unwrap_or("").trim();
    if secret.is_empty() {
        bail!(
            "the cluster secret ({}) is empty",
            file.map_or_else(|| ENV.to_string(), |f| format!("`{}`", f.display()))
        );
    }
    Ok(Some(Arc::from(secret.as_bytes())))
}

/// Refuses to listen on `addr` beyond loopback without a secret.
pub fn check_listen(what: &str, ip: std::net::IpAddr, secret: &Option<Arc<[u8]>>) -> Result<()> {
    if !ip.is_loopback() && secret.is_none() {
        bail!(
            "{what} on {ip} needs a cluster secret (--cluster-secret-file or {ENV}): without one, anduin listens on loopback only"
        );
    }
    Ok(())
}
