//! Server addresses as a feedback-loop check compares them: the same server written two ways
//! (`localhost` or `127.0.0.1`, with or without the default port, a scheme or a user) is one.

/// The addresses (`host:port`, lowercase) of a comma-separated list of servers, each a URL
/// with or without a scheme and a user: `localhost` and `[::1]` as `127.0.0.1`, port
/// `default_port` where none is written.
pub(crate) fn normalized(list: &str, default_port: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|url| {
            let rest = url.split_once("://").map_or(url, |(_, r)| r);
            let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
            let rest = rest.split('/').next().unwrap_or(rest).to_ascii_lowercase();
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(':') && !p.is_empty() && !p.contains(']') => {
                    (h.to_string(), p.to_string())
                }
                _ => (rest.clone(), default_port.to_string()),
            };
            let host = match host.as_str() {
                "localhost" | "[::1]" => "127.0.0.1".to_string(),
                _ => host,
            };
            format!("{host}:{port}")
        })
        .collect()
}
