//! The HTTP API of `anduin run`: its flags, and starting the server for one query and
//! registering it so that `anduin ctl` finds it without an address.
//!
//! How `anduin run` uses it (see [`start_api`]):
//! 1. before the run: `let api = start_api(&args.api, &name)?;` with `name` from
//!    [`ApiArgs::query_name`] (`None` with `--no-api`);
//! 2. add `api.events()` to the run's `Events` so the engine events reach `GET /api/v1/events`;
//! 3. once the run's [`QueryControl`] exists: `api.serve(control)?`;
//! 4. keep `api` alive until the run ends; dropping it unregisters, then stops the server.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anduin_api::registration::{Registration, RegistrationError, RegistrationGuard, RuntimeDir};
use anduin_api::{ApiConfig, ApiServer, QueryControl, Registry};
use anduin_runtime::Subscriber;
use anyhow::{bail, Context, Result};
use clap::Args;

/// The environment variable a token is read from when no token file is given.
pub const TOKEN_ENV: &str = "ANDUIN_API_TOKEN";

/// The API flags of `anduin run`.
#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// Serve the HTTP API (and `anduin ctl`) on this address; port 0 picks a free port. An
    /// address other than loopback needs a token (--api-token-file or ANDUIN_API_TOKEN).
    /// Also `localhost:PORT` and `http://HOST:PORT`, as `anduin ctl --api` takes them.
    #[arg(long = "api", value_name = "ADDR", default_value = "127.0.0.1:0", value_parser = parse_listen)]
    pub api: SocketAddr,
    /// Serve no HTTP API: `anduin ctl` cannot reach this run.
    #[arg(long, conflicts_with_all = ["api", "api_token_file"])]
    pub no_api: bool,
    /// Require this bearer token (the file's first line) on every API request. Without it,
    /// ANDUIN_API_TOKEN is read.
    #[arg(long, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// The query's name in the API and for `anduin ctl` (default: the query file's stem):
    /// 1 to 100 bytes, not starting with a dot, no slash, backslash or control character.
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    pub name: Option<String>,
}

/// `--api ADDR` of `anduin run`: `IP:PORT`, `localhost:PORT` (127.0.0.1), with or without
/// `http://` and a trailing `/`: the forms `anduin ctl --api` takes.
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let bare = s.trim();
    if bare.starts_with("https://") {
        return Err("the API serves plain HTTP: give IP:PORT or http://IP:PORT".into());
    }
    let bare = bare.strip_prefix("http://").unwrap_or(bare);
    let bare = bare.strip_suffix('/').unwrap_or(bare);
    if let Some((host, port)) = bare.rsplit_once(':') {
        if host.eq_ignore_ascii_case("localhost") {
            if let Ok(port) = port.parse::<u16>() {
                return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
            }
        }
    }
    bare.parse().map_err(|_| {
        format!(
            "expected IP:PORT, localhost:PORT or http://IP:PORT (port 0: a free port), found `{s}`"
        )
    })
}

/// `--name`: refused (exit 2, by clap) unless usable, with the rule.
fn parse_name(s: &str) -> Result<String, String> {
    anduin_api::check_name(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("{e} ({})", anduin_api::NAME_RULE))
}

impl ApiArgs {
    /// `--name`, or the stem of the query file (`sensors` for `examples/sensors.flow`) made
    /// usable ([`anduin_api::usable_name`]: `.hidden.flow` runs as `hidden`, with a warning).
    /// A stem with nothing usable in it is an error that says to pass `--name`.
    pub fn query_name(&self, file: &Path) -> Result<String, String> {
        if let Some(n) = &self.name {
            return Ok(n.clone());
        }
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match anduin_api::usable_name(&stem) {
            Some(name) if name == stem => Ok(name),
            Some(name) => {
                tracing::warn!(
                    file = %file.display(),
                    query = %name,
                    "the file's stem is not a usable query name; the query is named \"{name}\" \
                     (pass --name NAME to choose)"
                );
                Ok(name)
            }
            None => Err(format!(
                "the query file {} gives no usable query name: pass --name NAME ({})",
                file.display(),
                anduin_api::NAME_RULE
            )),
        }
    }
}

/// The token of `--api-token-file FILE` (its first line), else of `ANDUIN_API_TOKEN`, else
/// none. An empty one is an error; a file others can read is warned about.
pub fn read_token(file: Option<&Path>) -> Result<Option<String>> {
    let token = match file {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read the API token file {}", f.display()))?;
            if let Ok(meta) = std::fs::metadata(f) {
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!(file = %f.display(), "the API token file can be read by others: chmod 600 it");
                }
            }
            let line = text.lines().next().unwrap_or_default().trim().to_string();
            if line.is_empty() {
                bail!(
                    "the API token file {} is empty: put the token on its first line",
                    f.display()
                );
            }
            Some(line)
        }
        None => match std::env::var(TOKEN_ENV) {
            Ok(t) if t.trim().is_empty() => {
                bail!("{TOKEN_ENV} is set but empty: unset it or put the token in it")
            }
            Ok(t) => Some(t.trim().to_string()),
            Err(_) => None,
        },
    };
    Ok(token)
}

/// The API of one running query. Dropping it removes the registration, then stops the
/// server (requests in flight get a few seconds).
#[must_use = "the API stops when this is dropped"]
pub struct ServedApi {
    name: String,
    registry: Registry,
    // Declared before `server`: unregistered first, so `anduin ctl` never finds a run whose
    // server is gone.
    _registration: Option<RegistrationGuard>,
    server: ApiServer,
}

impl std::fmt::Debug for ServedApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedApi")
            .field("name", &self.name)
            .field("url", &self.server.url())
            .finish()
    }
}

impl ServedApi {
    /// The subscriber that sends the run's engine events to `GET /api/v1/events`; add it to
    /// the run's `Events`.
    pub fn events(&self) -> Arc<dyn Subscriber> {
        Arc::new(self.registry.event_feed(&self.name))
    }

    /// `http://ADDR`.
    #[cfg(test)]
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The line `anduin run` prints once the query runs: `api: http://ADDR`.
    pub fn announcement(&self) -> String {
        format!("api: {}", self.server.url())
    }

    /// Serves `query` (whose `info().name` must be the name the API was started with).
    pub fn serve(&self, query: Arc<dyn QueryControl>) -> Result<()> {
        let name = self.registry.add(query)?;
        if name != self.name {
            self.registry.remove(&name);
            bail!(
                "the query calls itself \"{name}\" but its API was started for \"{}\" (a bug in anduin)",
                self.name
            );
        }
        Ok(())
    }
}

/// The URL a local `anduin ctl` reaches `addr` at (loopback for an unspecified address).
fn local_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// Starts the API of the query `name` as `args` say (none with `--no-api`), prints
/// `api: http://ADDR` to stderr, and registers it in the runtime directory for `anduin ctl`.
/// Refuses a non-loopback address without a token. A registration that cannot be written
/// is a warning (the API still serves; `ctl` then needs `--api`).
pub fn start_api(args: &ApiArgs, name: &str) -> Result<Option<ServedApi>> {
    start_api_in(args, name, RuntimeDir::from_env)
}

/// [`start_api`], registering in the runtime directory `dir` gives.
fn start_api_in(
    args: &ApiArgs,
    name: &str,
    dir: impl FnOnce() -> Result<RuntimeDir, RegistrationError>,
) -> Result<Option<ServedApi>> {
    if args.no_api {
        return Ok(None);
    }
    let token = read_token(args.api_token_file.as_deref())?;
    let registry = Registry::new();
    let config = ApiConfig {
        listen: args.api,
        token: token.clone(),
        ..ApiConfig::loopback()
    };
    let server = ApiServer::start(config, registry.clone())?;
    let entry = Registration {
        name: name.to_string(),
        pid: std::process::id(),
        api: local_url(server.local_addr()),
        token: token.is_some(),
    };
    let registration = match dir().and_then(|d| d.register(&entry)) {
        Ok(g) => Some(g),
        Err(e) => {
            tracing::warn!(error = %e, "anduin ctl will not find this run without --api");
            None
        }
    };
    Ok(Some(ServedApi {
        name: name.to_string(),
        registry,
        _registration: registration,
        server,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        api: ApiArgs,
    }

    #[test]
    fn the_api_listens_on_loopback_by_default_and_no_api_excludes_the_api_flags() {
        let c = Cli::try_parse_from(["x"]).expect("parses");
        assert_eq!(
            c.api.api,
            "127.0.0.1:0".parse::<SocketAddr>().expect("an address")
        );
        assert!(!c.api.no_api);
        assert!(Cli::try_parse_from(["x", "--no-api", "--api", "127.0.0.1:9"]).is_err());
        assert!(Cli::try_parse_from(["x", "--no-api"]).is_ok());
    }

    #[test]
    fn the_api_flags_sit_beside_those_of_anduin_run_without_a_clash() {
        #[derive(Parser, Debug)]
        struct Run {
            #[command(flatten)]
            run: crate::cmd::run::RunArgs,
        }
        let r = Run::try_parse_from([
            "run",
            "q.flow",
            "--api",
            "127.0.0.1:9",
            "--name",
            "s",
            "-q",
            "--checkpoint-dir",
            "c",
        ])
        .expect("parses");
        assert_eq!(
            (r.run.api.api.port(), r.run.api.query_name(&r.run.file)),
            (9, Ok("s".to_string()))
        );
        assert!(r.run.quiet);
    }

    #[test]
    fn the_run_takes_the_address_forms_ctl_takes() {
        let at = |a: &str| Cli::try_parse_from(["x", "--api", a]).map(|c| c.api.api);
        let local = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        assert_eq!(at("127.0.0.1:0").expect("ip:port"), local(0));
        assert_eq!(at("localhost:0").expect("localhost"), local(0));
        assert_eq!(at("http://127.0.0.1:0").expect("a URL"), local(0));
        assert_eq!(at("http://localhost:9/").expect("a URL"), local(9));
        assert_eq!(
            at("http://[::1]:7").expect("v6"),
            "[::1]:7".parse::<SocketAddr>().expect("addr")
        );
        for bad in [
            "https://127.0.0.1:1",
            "127.0.0.1",
            "evil.example:1",
            "http://h:1/x",
        ] {
            let e = at(bad).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn the_name_is_the_file_stem_unless_given() {
        let c = Cli::try_parse_from(["x"]).expect("parses");
        assert_eq!(
            c.api.query_name(Path::new("examples/sensors.flow")),
            Ok("sensors".to_string())
        );
        let c = Cli::try_parse_from(["x", "--name", "s2"]).expect("parses");
        assert_eq!(
            c.api.query_name(Path::new("examples/sensors.flow")),
            Ok("s2".to_string())
        );
    }

    #[test]
    fn a_bad_name_is_refused_up_front_and_a_bad_stem_made_usable_or_refused() {
        let long = "n".repeat(300);
        for bad in ["a/b", "", ".", "..", "a\nb", long.as_str()] {
            let e = Cli::try_parse_from(["x", "--name", bad]).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            assert!(e.to_string().contains("1 to 100 bytes"), "{e}");
        }
        let c = Cli::try_parse_from(["x"]).expect("parses");
        assert_eq!(
            c.api.query_name(Path::new("q/.hidden.flow")),
            Ok("hidden".to_string())
        );
        assert_eq!(
            c.api
                .query_name(Path::new(&format!("{long}.flow")))
                .map(|n| n.len()),
            Ok(100)
        );
        let e = c
            .api
            .query_name(Path::new("q/....flow"))
            .expect_err("nothing usable");
        assert!(e.contains("pass --name"), "{e}");
    }

    #[test]
    fn an_unspecified_address_is_reached_on_loopback() {
        assert_eq!(
            local_url("0.0.0.0:80".parse().expect("addr")),
            "http://127.0.0.1:80"
        );
        assert_eq!(
            local_url("[::]:80".parse().expect("addr")),
            "http://[::1]:80"
        );
        assert_eq!(
            local_url("10.1.2.3:80".parse().expect("addr")),
            "http://10.1.2.3:80"
        );
    }

    #[test]
    fn a_token_is_the_first_line_of_its_file_and_an_empty_one_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let f = dir.path().join("token");
        std::fs::write(&f, "abc \nrest\n").expect("written");
        assert_eq!(read_token(Some(&f)).expect("read"), Some("abc".to_string()));
        std::fs::write(&f, "\n").expect("written");
        let e = read_token(Some(&f)).expect_err("refused");
        assert!(e.to_string().contains("is empty"), "{e}");
    }

    #[test]
    fn a_started_api_serves_the_query_registered_for_ctl_until_dropped() {
        use anduin_api::fake::FakeQuery;
        use anduin_runtime::EngineEvent;

        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = RuntimeDir::open(tmp.path().join("anduin")).expect("made");
        let listed = dir.clone();
        let c = Cli::try_parse_from(["x", "--name", "sensors"]).expect("parses");
        let api = start_api_in(&c.api, "sensors", move || Ok(dir))
            .expect("starts")
            .expect("not --no-api");
        let runs = listed.list().expect("listed");
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].name.as_str(), runs[0].api.as_str(), runs[0].token),
            ("sensors", api.url().as_str(), false)
        );
        let client = anduin_api::Client::new(&runs[0].api, None).expect("a URL");
        let mut events = client.events(None).expect("subscribed");
        api.serve(Arc::new(FakeQuery::new("sensors")))
            .expect("served");
        assert_eq!(client.query("sensors").expect("served").name, "sensors");
        let e = api
            .serve(Arc::new(FakeQuery::new("other")))
            .expect_err("a second query");
        assert!(e.to_string().contains("calls itself \"other\""), "{e}");
        assert!(client.query("other").is_err(), "not served");
        api.events()
            .event(&EngineEvent::CheckpointStale { age_ms: 5 });
        let got = events.next().expect("an event").expect("read");
        assert_eq!(got.event, "checkpoint_stale");
        drop(api);
        assert!(listed.list().expect("listed").is_empty(), "unregistered");
        assert!(events.next().is_none(), "the server stopped");
    }

    #[test]
    fn no_api_starts_nothing() {
        let c = Cli::try_parse_from(["x", "--no-api"]).expect("parses");
        let started = start_api_in(&c.api, "q", || panic!("no registration without an API"));
        assert!(started.expect("no error").is_none());
    }

    #[test]
    fn a_non_loopback_address_without_a_token_is_refused() {
        let c = Cli::try_parse_from(["x", "--api", "0.0.0.0:0"]).expect("parses");
        if std::env::var_os(TOKEN_ENV).is_some() {
            return; // the environment gives a token
        }
        let e = start_api(&c.api, "q").expect_err("refused");
        assert!(e.to_string().contains("without a token"), "{e}");
    }
}
