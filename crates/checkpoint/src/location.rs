//! Where a query's checkpoints live, as `--checkpoint-store` names it: a local directory (a
//! path, or `file:///path`), or a bucket and prefix of an S3-compatible object store
//! (`s3://bucket/prefix`), with the settings the object store is reached with. Parsing and the
//! reading of the settings are pure: the variables come in as a list, so tests need no
//! environment.

use std::fmt;
use std::path::PathBuf;

use crate::error::CheckpointError;

/// What `--checkpoint-store` accepts, for messages.
pub const SUPPORTED: &str =
    "a local directory (a path or file:///absolute/path) or s3://bucket/prefix";

/// Where checkpoints live.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// A local (or mounted) directory: a path, or a `file://` URL.
    Local(PathBuf),
    /// A bucket of an S3-compatible object store, and the prefix of the query's checkpoints
    /// in it (no leading or trailing `/`; empty for the bucket's root).
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix, `/`-separated.
        prefix: String,
    },
}

impl StoreLocation {
    /// Parses `given`: a path (anything without `://`), `file:///absolute/path`, or
    /// `s3://bucket[/prefix]`. Anything else is refused, naming what is supported.
    pub fn parse(given: &str) -> Result<Self, CheckpointError> {
        let bad = |problem: String| CheckpointError::BadLocation {
            given: given.to_string(),
            problem,
        };
        if given.is_empty() {
            return Err(bad(format!("empty; expected {SUPPORTED}")));
        }
        let Some((scheme, rest)) = given.split_once("://") else {
            return Ok(StoreLocation::Local(PathBuf::from(given)));
        };
        if rest.contains(['?', '#']) {
            return Err(bad(
                "a query (`?`) or fragment (`#`) is not supported".into()
            ));
        }
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                // file:///abs/path, or file://localhost/abs/path.
                let path = rest.strip_prefix("localhost").unwrap_or(rest);
                if !path.starts_with('/') {
                    return Err(bad(
                        "a file:// URL names an absolute path on this machine: file:///path".into(),
                    ));
                }
                Ok(StoreLocation::Local(PathBuf::from(path)))
            }
            "s3" => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(bad("no bucket: expected s3://bucket/prefix".into()));
                }
                if !bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._".contains(&b))
                {
                    return Err(bad(format!(
                        "`{bucket}` is not a bucket name (lower-case letters, digits, `-`, `.`, `_`)"
                    )));
                }
                let prefix = prefix.trim_end_matches('/');
                if !prefix.is_empty() {
                    for part in prefix.split('/') {
                        if part.is_empty() || part == "." || part == ".." {
                            return Err(bad(format!(
                                "the prefix `{prefix}` has an empty, `.` or `..` part"
                            )));
                        }
                    }
                }
                Ok(StoreLocation::S3 {
                    bucket: bucket.to_string(),
                    prefix: prefix.to_string(),
                })
            }
            other => Err(bad(format!(
                "unsupported scheme `{other}://`; a checkpoint store is {SUPPORTED}"
            ))),
        }
    }

    /// Whether the checkpoints live in an object store (staged in a local cache first).
    pub fn is_remote(&self) -> bool {
        !matches!(self, StoreLocation::Local(_))
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Local(p) => write!(f, "{}", p.display()),
            StoreLocation::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            StoreLocation::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// How an S3-compatible store is reached, from the usual AWS variables:
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (or
/// `AWS_DEFAULT_REGION`), `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`) and `AWS_ALLOW_HTTP`.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// The access key id.
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<String>,
    /// A session token, with temporary credentials.
    pub session_token: Option<String>,
    /// The region (default `us-east-1`).
    pub region: String,
    /// Another endpoint than AWS's: a MinIO, Ceph, R2, … server (`http://host:port`).
    pub endpoint: Option<String>,
    /// Whether plain HTTP is allowed: when the endpoint is `http://`, or `AWS_ALLOW_HTTP` is
    /// true.
    pub allow_http: bool,
}

impl fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secrets.
        f.debug_struct("S3Settings")
            .field("access_key_id", &self.access_key_id)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

impl S3Settings {
    /// The settings in this process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(std::env::vars())
    }

    /// The settings in `vars` (name, value): the `AWS_*` variables above, the others
    /// ignored. An empty value counts as unset.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut get = std::collections::BTreeMap::new();
        for (k, v) in vars {
            if k.starts_with("AWS_") && !v.is_empty() {
                get.insert(k, v);
            }
        }
        let endpoint = get
            .get("AWS_ENDPOINT_URL_S3")
            .or_else(|| get.get("AWS_ENDPOINT_URL"))
            .or_else(|| get.get("AWS_ENDPOINT"))
            .map(|e| e.trim_end_matches('/').to_string());
        let allow_http = endpoint
            .as_deref()
            .is_some_and(|e| e.to_ascii_lowercase().starts_with("http://"))
            || get
                .get("AWS_ALLOW_HTTP")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
        S3Settings {
            access_key_id: get.get("AWS_ACCESS_KEY_ID").cloned(),
            secret_access_key: get.get("AWS_SECRET_ACCESS_KEY").cloned(),
            session_token: get
                .get("AWS_SESSION_TOKEN")
                .or_else(|| get.get("AWS_SECURITY_TOKEN"))
                .cloned(),
            region: get
                .get("AWS_REGION")
                .or_else(|| get.get("AWS_DEFAULT_REGION"))
                .cloned()
                .unwrap_or_else(|| "us-east-1".to_string()),
            endpoint,
            allow_http,
        }
    }

    /// What is missing for `url` to be reached, if anything: both keys are needed
    /// (credentials from an instance profile or a web identity are not supported yet).
    pub fn missing_credentials(&self) -> Option<String> {
        match (&self.access_key_id, &self.secret_access_key) {
            (Some(_), Some(_)) => None,
            (None, None) => Some(
                "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (credentials \
                 from an instance profile or a web identity are not supported yet)"
                    .into(),
            ),
            (None, Some(_)) => {
                Some("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".into())
            }
            (Some(_), None) => {
                Some("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> StoreLocation {
        StoreLocation::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn refused(s: &str) -> String {
        StoreLocation::parse(s)
            .map(|l| panic!("{s} was accepted as {l:?}"))
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn paths_and_file_urls_are_local_directories() {
        assert_eq!(parse("ckpt"), StoreLocation::Local("ckpt".into()));
        assert_eq!(parse("/var/ck"), StoreLocation::Local("/var/ck".into()));
        assert_eq!(
            parse("file:///var/ck"),
            StoreLocation::Local("/var/ck".into())
        );
        assert_eq!(
            parse("file://localhost/var/ck"),
            StoreLocation::Local("/var/ck".into())
        );
        assert!(refused("file://ck").contains("absolute path"));
        assert!(!parse("ckpt").is_remote());
    }

    #[test]
    fn s3_urls_name_a_bucket_and_a_prefix() {
        let l = parse("s3://bucket-1/team/q2/");
        assert_eq!(
            l,
            StoreLocation::S3 {
                bucket: "bucket-1".into(),
                prefix: "team/q2".into()
            }
        );
        assert!(l.is_remote());
        assert_eq!(l.to_string(), "s3://bucket-1/team/q2");
        let root = parse("s3://bucket");
        assert_eq!(
            root,
            StoreLocation::S3 {
                bucket: "bucket".into(),
                prefix: String::new()
            }
        );
        assert_eq!(root.to_string(), "s3://bucket");
        assert_eq!(parse("S3://b/p").to_string(), "s3://b/p");
    }

    #[test]
    fn malformed_urls_and_unknown_schemes_are_refused_saying_what_is_supported() {
        let e = refused("gs://bucket/p");
        assert!(
            e.contains("gs://bucket/p") && e.contains("unsupported scheme `gs://`"),
            "{e}"
        );
        assert!(
            e.contains("s3://bucket/prefix") && e.contains("file:///"),
            "{e}"
        );
        assert!(refused("s3:///p").contains("no bucket"));
        assert!(refused("s3://Bucket/p").contains("not a bucket name"));
        assert!(refused("s3://b/a//c").contains("empty"));
        assert!(refused("s3://b/a/../c").contains("`..`"));
        assert!(refused("s3://b/p?versionId=1").contains("query"));
        assert!(refused("").contains("empty"));
    }

    fn vars(v: &[(&str, &str)]) -> S3Settings {
        S3Settings::from_vars(v.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn s3_settings_come_from_the_usual_aws_variables() {
        let s = vars(&[
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"),
            ("HOME", "/root"),
        ]);
        assert_eq!(s.region, "eu-west-1");
        assert_eq!(s.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert!(s.allow_http, "an http:// endpoint allows http");
        assert_eq!(s.missing_credentials(), None);
        assert!(!format!("{s:?}").contains("secret"), "{s:?}");

        let s = vars(&[
            ("AWS_REGION", "us-west-2"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "https://s3.example"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        assert_eq!(s.region, "us-west-2", "AWS_REGION wins");
        assert!(!s.allow_http);
        assert!(s
            .missing_credentials()
            .is_some_and(|m| m.contains("AWS_ACCESS_KEY_ID")));

        let s = vars(&[("AWS_ACCESS_KEY_ID", "")]);
        assert_eq!(s.region, "us-east-1");
        assert!(s
            .missing_credentials()
            .is_some_and(|m| m.contains("no credentials")));
        assert!(vars(&[("AWS_ALLOW_HTTP", "true")]).allow_http);
    }
}
