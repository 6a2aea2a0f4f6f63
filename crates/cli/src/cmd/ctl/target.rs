//! Which API `anduin ctl` calls: `--api ADDR`, or the local runs registered in the runtime
//! directory (the query's name picks among them).

use std::path::Path;

use anduin_api::registration::{Registration, RuntimeDir};
use anduin_api::Client;
use anyhow::{bail, Result};

/// The local runs, or an error that says how to start one or reach one elsewhere.
pub fn local_runs() -> Result<(Vec<Registration>, String)> {
    let dir = RuntimeDir::from_env()?;
    let runs = dir.list()?;
    Ok((runs, dir.path().display().to_string()))
}

/// A client of `reg`'s run with `token`; refused when the run needs a token and none is given.
pub fn client_of(reg: &Registration, token: Option<String>) -> Result<Client> {
    if reg.token && token.is_none() {
        bail!(
            "the run of \"{}\" (pid {}, {}) needs a token: give --api-token-file FILE or set ANDUIN_API_TOKEN",
            reg.name,
            reg.pid,
            reg.api
        );
    }
    Ok(Client::new(&reg.api, token)?)
}

fn describe(runs: &[Registration]) -> String {
    runs.iter()
        .map(|r| format!("\"{}\" (pid {}, {})", r.name, r.pid, r.api))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The client for `query`: `--api ADDR` if given, else the one local run of that name.
pub fn client_for(api: Option<&str>, token: Option<String>, query: &str) -> Result<Client> {
    if let Some(addr) = api {
        return Ok(Client::new(addr, token)?);
    }
    let (runs, dir) = local_runs()?;
    pick(&runs, query, Path::new(&dir)).and_then(|r| client_of(r, token))
}

/// The run of `query` among `runs` (registered in `dir`).
fn pick<'a>(runs: &'a [Registration], query: &str, dir: &Path) -> Result<&'a Registration> {
    let named: Vec<&Registration> = runs.iter().filter(|r| r.name == query).collect();
    match named.as_slice() {
        [one] => Ok(one),
        [] if runs.is_empty() => bail!(
            "no anduin run is registered on this machine (in {}): start one with `anduin run`, or give --api ADDR",
            dir.display()
        ),
        [] => bail!(
            "no run of a query named \"{query}\" on this machine; running: {} (give --api ADDR to reach another machine)",
            describe(runs)
        ),
        several => bail!(
            "{} runs of a query named \"{query}\" on this machine: {}; pick one with --api",
            several.len(),
            several
                .iter()
                .map(|r| format!("pid {} at {}", r.pid, r.api))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, pid: u32) -> Registration {
        Registration {
            name: name.into(),
            pid,
            api: format!("http://127.0.0.1:{pid}"),
            token: false,
        }
    }

    #[test]
    fn the_query_name_picks_the_run_and_none_or_several_are_explained() {
        let dir = Path::new("/run/user/1/anduin");
        let runs = [run("a", 1), run("b", 2), run("b", 3)];
        assert_eq!(pick(&runs, "a", dir).expect("one").pid, 1);
        let e = pick(&runs, "b", dir).expect_err("two").to_string();
        assert!(
            e.contains("2 runs")
                && e.contains("pid 3 at http://127.0.0.1:3")
                && e.contains("--api"),
            "{e}"
        );
        let e = pick(&runs, "c", dir).expect_err("none").to_string();
        assert!(e.contains("running: \"a\" (pid 1"), "{e}");
        let e = pick(&[], "c", dir).expect_err("nothing runs").to_string();
        assert!(
            e.contains("no anduin run is registered") && e.contains("/run/user/1/anduin"),
            "{e}"
        );
    }

    #[test]
    fn a_run_that_needs_a_token_is_not_called_without_one() {
        let mut r = run("a", 1);
        r.token = true;
        let e = client_of(&r, None).expect_err("refused").to_string();
        assert!(e.contains("ANDUIN_API_TOKEN"), "{e}");
        assert!(client_of(&r, Some("t".into())).is_ok());
    }
}
