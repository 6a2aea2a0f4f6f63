//! The flags of `--scheduler kubernetes`, and the settings they make, with the defaults of
//! a pod's service account.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::{Endpoint, Settings};

/// Where a pod finds its service account's token, CA certificate and namespace.
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The API server as pods reach it.
const IN_CLUSTER_API: &str = "https://kubernetes.default.svc";
/// The flags of `--scheduler kubernetes`.
#[derive(Args, Debug, Clone, Default)]
pub struct KubeArgs {
    /// With `--scheduler kubernetes`: the API server (default, in a pod:
    /// https://kubernetes.default.svc; http://… for `kubectl proxy`).
    #[arg(long, value_name = "URL")]
    pub kube_api: Option<String>,
    /// With `--scheduler kubernetes`: the namespace of the worker pods (default, in a pod:
    /// its own).
    #[arg(long, value_name = "NS")]
    pub kube_namespace: Option<String>,
    /// With `--scheduler kubernetes`: the bearer token's file (default, in a pod: its
    /// service account's).
    #[arg(long, value_name = "FILE")]
    pub kube_token_file: Option<PathBuf>,
    /// With `--scheduler kubernetes`: the CA certificate (PEM) of the API server's (default,
    /// in a pod: its service account's ca.crt).
    #[arg(long, value_name = "FILE")]
    pub kube_ca_file: Option<PathBuf>,
    /// With `--scheduler kubernetes`: the workers' image, with `anduin` on its PATH.
    #[arg(long, value_name = "IMAGE")]
    pub kube_worker_image: Option<String>,
    /// With `--scheduler kubernetes`: the Secret whose keys become every worker's
    /// environment: ANDUIN_CLUSTER_SECRET, and AWS_* for a checkpoint store on S3.
    #[arg(long, value_name = "NAME")]
    pub kube_worker_secret: Option<String>,
    /// With `--scheduler kubernetes`: the coordinator's name in its pods' label
    /// anduin.io/coordinator and names ({NAME}-worker-{i}); a restarted coordinator of the
    /// same name adopts them.
    #[arg(long, default_value = "anduin", value_name = "NAME")]
    pub kube_name: String,
    /// With `--scheduler kubernetes`: the coordinator's address as the workers reach it
    /// (its Service, `anduin-coordinator:7400`, resolved once at start); default: --listen.
    #[arg(long, value_name = "HOST:PORT")]
    pub kube_coordinator_address: Option<String>,
}

impl KubeArgs {
    /// Whether any of these flags is given (they are refused with another scheduler).
    pub fn any(&self) -> bool {
        let Self {
            kube_api,
            kube_namespace,
            kube_token_file,
            kube_ca_file,
            kube_worker_image,
            kube_worker_secret,
            kube_name,
            kube_coordinator_address,
        } = self;
        kube_api.is_some()
            || kube_namespace.is_some()
            || kube_token_file.is_some()
            || kube_ca_file.is_some()
            || kube_worker_image.is_some()
            || kube_worker_secret.is_some()
            || kube_name != "anduin"
            || kube_coordinator_address.is_some()
    }

    /// The scheduler's settings, with the defaults of a pod's service account, for `workers`
    /// workers of `slots` slots of the coordinator listening on `listen` (and no more for
    /// instances added while queries run: [`Settings::at_most`]).
    pub fn settings(&self, listen: SocketAddr, workers: u32, slots: u32) -> Result<Settings> {
        let endpoint = self.endpoint(None, "--scheduler kubernetes")?;
        let namespace = endpoint.namespace.clone();
        let Some(image) = self.kube_worker_image.clone() else {
            bail!("--scheduler kubernetes: give the workers' image with --kube-worker-image IMAGE (with `anduin` on its PATH)");
        };
        let Some(env_secret) = self.kube_worker_secret.clone() else {
            bail!(
                "--scheduler kubernetes: give --kube-worker-secret NAME, the Secret of namespace \
                 {namespace} whose keys become the workers' environment: ANDUIN_CLUSTER_SECRET \
                 (the coordinator's cluster secret: workers listen beyond loopback) and AWS_* \
                 for a checkpoint store on S3 (deploy/kubernetes/secret.yaml)"
            );
        };
        check_name(&self.kube_name)?;
        let coordinator_address = match &self.kube_coordinator_address {
            Some(a) => resolve(a)?,
            None if listen.ip().is_unspecified() => bail!(
                "--scheduler kubernetes: the coordinator listens on {listen}: give the address \
                 its workers reach it at with --kube-coordinator-address HOST:PORT (its Service, \
                 e.g. anduin-coordinator:7400)"
            ),
            None => listen,
        };
        Ok(Settings {
            endpoint,
            name: self.kube_name.clone(),
            image,
            env_secret,
            coordinator_address,
            workers,
            max_workers: workers,
            slots,
        })
    }
}

impl KubeArgs {
    /// Where the API is and how to reach it, with the defaults of a pod's service account;
    /// in `namespace` if given, else `--kube-namespace`, else the pod's (`what` is the flag
    /// that needs it, for an error).
    pub fn endpoint(&self, namespace: Option<&str>, what: &str) -> Result<Endpoint> {
        let service_account = Path::new(SERVICE_ACCOUNT);
        let in_pod = |file: &str| {
            let f = service_account.join(file);
            f.exists().then_some(f)
        };
        let namespace = match namespace.or(self.kube_namespace.as_deref()) {
            Some(ns) => ns.to_string(),
            None => match in_pod("namespace") {
                Some(f) => std::fs::read_to_string(&f)
                    .with_context(|| format!("cannot read `{}`", f.display()))?
                    .trim()
                    .to_string(),
                None => bail!(
                    "{what}: give --kube-namespace NS (outside a pod there is no \
                     {SERVICE_ACCOUNT}/namespace to take it from)"
                ),
            },
        };
        Ok(Endpoint {
            api: self
                .kube_api
                .clone()
                .unwrap_or_else(|| IN_CLUSTER_API.to_string()),
            namespace,
            token_file: self.kube_token_file.clone().or_else(|| in_pod("token")),
            ca_file: self.kube_ca_file.clone().or_else(|| in_pod("ca.crt")),
        })
    }

    /// Whether only the flags of reaching the API are given (an election by a Lease takes
    /// them with any scheduler).
    pub fn only_endpoint(&self) -> bool {
        self.kube_worker_image.is_none()
            && self.kube_worker_secret.is_none()
            && self.kube_name == "anduin"
            && self.kube_coordinator_address.is_none()
    }
}

/// A pod's name prefix: a DNS label short enough for `-worker-NNN` after it.
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !ok {
        bail!("--kube-name `{name}`: give at most 40 lowercase letters, digits and inner dashes (it names pods and labels them)");
    }
    Ok(())
}

/// `HOST:PORT` as an address (a Service's name resolves to its stable cluster IP).
fn resolve(address: &str) -> Result<SocketAddr> {
    let all: Vec<SocketAddr> = address
        .to_socket_addrs()
        .with_context(|| {
            format!("--kube-coordinator-address {address}: cannot resolve it (give HOST:PORT)")
        })?
        .collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .with_context(|| format!("--kube-coordinator-address {address} resolves to no address"))
}
