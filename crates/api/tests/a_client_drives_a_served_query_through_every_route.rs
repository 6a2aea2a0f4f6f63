//! A real server on 127.0.0.1:0 serving a fake query, driven through every route by the
//! blocking client, with a token; the event stream ends when the server shuts down.

use std::sync::Arc;

use anduin_api::fake::FakeQuery;
use anduin_api::{ApiConfig, ApiServer, Client, ClientError, QueryControl, Registry};
use anduin_runtime::{EngineEvent, Subscriber};
use anyhow::Result;

const TOKEN: &str = "a-long-enough-secret";

fn refused_status(r: Result<impl std::fmt::Debug, ClientError>) -> Option<u16> {
    match r {
        Err(ClientError::Refused { status, .. }) => Some(status),
        _ => None,
    }
}

#[test]
fn a_client_drives_a_served_query_through_every_route() -> Result<()> {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry.add(Arc::clone(&sensors) as Arc<dyn QueryControl>)?;
    let server = ApiServer::start(
        ApiConfig {
            token: Some(TOKEN.into()),
            ..ApiConfig::loopback()
        },
        registry.clone(),
    )?;
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");

    // Without the token, or with a wrong one: 401, whatever the route.
    let anonymous = Client::new(&addr.to_string(), None)?;
    assert_eq!(refused_status(anonymous.queries()), Some(401));
    assert_eq!(refused_status(anonymous.prometheus()), Some(401));
    assert_eq!(refused_status(anonymous.events(None)), Some(401));
    let wrong = Client::new(&server.url(), Some("guess".into()))?;
    assert_eq!(refused_status(wrong.stop("sensors")), Some(401));
    assert_eq!(
        sensors.state(),
        anduin_runtime::control::QueryState::Running
    );

    let c = Client::new(&server.url(), Some(TOKEN.into()))?;
    let mut events = c.events(Some("sensors"))?;

    assert_eq!(c.queries()?.len(), 1);
    let info = c.query("sensors")?;
    assert_eq!(info.operators.len(), 3);
    assert_eq!(c.params("sensors", "low")?[0].value, "value < 40");

    let change = c.set("sensors", "low", "condition", "value < 30", "test")?;
    assert_eq!(
        (change.epoch, change.old.as_str(), change.new.as_str()),
        (1, "value < 40", "value < 30")
    );
    assert_eq!(c.history("sensors")?, vec![change]);
    let refused = c.set("sensors", "low", "condition", "thirty", "test");
    match refused {
        Err(ClientError::Refused {
            status: 400,
            error,
            message,
        }) => {
            assert_eq!(error, "invalid");
            assert!(message.contains("found `thirty`"), "{message}");
        }
        other => panic!("expected a 400 refusal, got {other:?}"),
    }
    match c.params("sensors", "high") {
        Err(ClientError::Refused {
            status: 404, error, ..
        }) => assert_eq!(error, "unknown_operator"),
        other => panic!("expected a 404, got {other:?}"),
    }
    match c.history("other") {
        Err(e @ ClientError::Refused { status: 404, .. }) => {
            assert_eq!(e.to_string(), "no query named \"other\" (served: sensors)");
        }
        other => panic!("expected a 404, got {other:?}"),
    }

    assert_eq!(c.checkpoint("sensors")?, 2);
    assert_eq!(
        c.checkpoints("sensors")?
            .iter()
            .map(|c| c.epoch)
            .collect::<Vec<_>>(),
        [2]
    );
    assert_eq!(c.metrics("sensors")?.control_changes, 1);
    let text = c.prometheus()?;
    assert!(
        text.contains("anduin_query_control_changes_total{query=\"sensors\"} 1"),
        "{text}"
    );

    // An engine event published by the run reaches the stream opened above.
    registry
        .event_feed("sensors")
        .event(&EngineEvent::CheckpointCompleted {
            epoch: 2,
            finished: false,
        });
    let e = events.next().expect("an event")?;
    assert_eq!(e.event, "checkpoint_completed");
    let data: serde_json::Value = serde_json::from_str(&e.data)?;
    assert_eq!(data["query"], "sensors");
    assert_eq!(data["epoch"], 2);

    c.stop("sensors")?;
    assert_eq!(
        sensors.state(),
        anduin_runtime::control::QueryState::Stopping
    );
    assert_eq!(refused_status(c.stop("sensors")), Some(409));

    // Shutting down ends the event stream, and nothing listens any more.
    server.shutdown();
    assert!(events.next().is_none(), "the stream ends with the server");
    assert!(matches!(c.queries(), Err(ClientError::Unreachable { .. })));
    Ok(())
}
