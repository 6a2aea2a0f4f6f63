// The API's routes as the page calls them: JSON in and out, the bearer token (when the
// server wants one) on every call, and the event stream read with fetch (EventSource cannot
// send a header).

const TOKEN_KEY = "anduin-api-token";

/** A refusal: the server's status, code and message. */
export class ApiError extends Error {
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

export const api = {
  token: sessionStorage.getItem(TOKEN_KEY),

  setToken(token) {
    this.token = token || null;
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  },

  headers(extra) {
    const h = { Accept: "application/json", ...extra };
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  },

  async call(method, path, body) {
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: this.headers(body === undefined ? {} : { "Content-Type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
      });
    } catch (e) {
      throw new ApiError(0, "unreachable", "the server does not answer (has the run ended?): " + e.message);
    }
    const text = await response.text();
    let value = null;
    try {
      value = text ? JSON.parse(text) : null;
    } catch {
      value = null;
    }
    if (!response.ok) {
      throw new ApiError(
        response.status,
        value && value.error ? value.error : "http_" + response.status,
        value && value.message ? value.message : text || response.statusText,
      );
    }
    return value;
  },

  get(path) {
    return this.call("GET", path);
  },

  query(name) {
    return "/api/v1/queries/" + encodeURIComponent(name);
  },

  /**
   * Reads `GET /api/v1/events?query=NAME` until `signal` aborts, calling `onEvent(kind, data)`
   * for each event and `onState(text, ok)` as the connection comes and goes; reconnects after
   * a break.
   */
  async events(name, signal, onEvent, onState) {
    let wait = 500;
    while (!signal.aborted) {
      try {
        const response = await fetch("/api/v1/events?query=" + encodeURIComponent(name), {
          headers: this.headers({ Accept: "text/event-stream" }),
          signal,
          cache: "no-store",
        });
        if (!response.ok) throw new Error("the event stream answered " + response.status);
        onState("live", true);
        wait = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r\n?/g, "\n");
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let kind = "message";
            const data = [];
            for (const line of frame.split("\n")) {
              if (line.startsWith("event:")) kind = line.slice(6).trim();
              else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
            }
            if (data.length === 0) continue; // a keep-alive comment
            let parsed;
            try {
              parsed = JSON.parse(data.join("\n"));
            } catch {
              parsed = { text: data.join("\n") };
            }
            onEvent(kind, parsed);
          }
        }
        onState("the event stream ended; reconnecting", false);
      } catch (e) {
        if (signal.aborted) return;
        onState("no event stream (" + e.message + "); retrying", false);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 10_000);
    }
  },
};
