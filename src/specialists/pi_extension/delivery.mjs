// Event delivery into pi: at-least-once, deduplicated, re-sent when pi dropped a message.
// Pure (no pi import): index.ts gives it pi.sendMessage and the sidecar's ack; plain node
// tests it (tests/node/). Verified against pi 1.6.0.

export const CUSTOM_TYPE = "specialists-event";
export const SEEN_CAP = 2000; // events.seenCap

export function eventIdsOf(message) {
  const events = message?.details?.events;
  return Array.isArray(events) ? events.map((e) => e?.id).filter((id) => typeof id === "string") : [];
}

function isOurs(message) {
  return message?.customType === CUSTOM_TYPE;
}

/**
 * At-least-once delivery of pushed batches into pi (R-E3, R-E6).
 *
 * A batch is sent with pi.sendMessage once `canSend()` allows it; it is acknowledged to the
 * sidecar only when pi's message_end shows our message (pi accepted it into the session).
 * pi 0.73.1 could drop or strand a steer that races the end of a run (kept as a guard on
 * 1.6.0), so a batch still not accepted after `resendAfterMs` while pi is idle is sent
 * again; `filterContext` keeps the model from reading an event twice. Events already in the session (a restart between
 * pi's acceptance and our ack) are acknowledged without sending them again.
 */
export class Delivery {
  constructor({ send, ack, canSend = () => true, isIdle = () => true, now = Date.now, resendAfterMs = 3000 }) {
    this.send = send;
    this.ack = ack;
    this.canSend = canSend;
    this.isIdle = isIdle;
    this.now = now;
    this.resendAfterMs = resendAfterMs;
    this.accepted = new Set(); // insertion order: the oldest are dropped past SEEN_CAP
    this.incoming = new Map(); // batch -> push, waiting until pi can take it
    this.inFlight = new Map(); // batch -> { ids, message, sentAt, sends }
    this.waiters = new Set();
  }

  /** Ids of events pi already holds, from the session's entries (custom_message). */
  restore(entries) {
    for (const entry of entries ?? []) {
      if (entry?.type === "custom_message" && isOurs(entry)) this._accept(eventIdsOf(entry));
    }
  }

  onPush(push) {
    const events = Array.isArray(push?.events) ? push.events : [];
    const fresh = events.filter((e) => typeof e?.id === "string" && !this.accepted.has(e.id));
    if (fresh.length === 0) {
      this.ack(push.batch);
      return "duplicate";
    }
    if (this.inFlight.has(push.batch)) return "in-flight"; // a re-push: pi has it already
    for (const [batch, flight] of [...this.inFlight]) {
      if (fresh.every((e) => flight.ids.includes(e.id))) {
        // A restarted sidecar pushes the same events under a new batch id: ack that one.
        this.inFlight.delete(batch);
        this.inFlight.set(push.batch, flight);
        return "in-flight";
      }
    }
    this.incoming.set(push.batch, fresh);
    this.flush();
    return this.inFlight.has(push.batch) ? "sent" : "held";
  }

  flush() {
    if (this.incoming.size === 0 || !this.canSend()) return;
    for (const [batch, fresh] of [...this.incoming]) {
      this.incoming.delete(batch);
      const message = {
        customType: CUSTOM_TYPE,
        content: fresh.map((e) => String(e.text ?? "")).join("\n\n"),
        display: true,
        details: {
          batch,
          synthetic: true,
          events: fresh.map((e) => ({ id: e.id, kind: e.kind, tool: e.tool, call_id: e.call_id })),
        },
      };
      this.inFlight.set(batch, { ids: fresh.map((e) => e.id), message, sentAt: this.now(), sends: 1 });
      this.send(message);
      for (const wake of [...this.waiters]) wake(true);
    }
  }

  onMessageEnd(message) {
    if (message?.role !== "custom" || !isOurs(message)) return;
    this._accept(eventIdsOf(message));
    for (const [batch, flight] of [...this.inFlight]) {
      if (flight.ids.every((id) => this.accepted.has(id))) {
        this.inFlight.delete(batch);
        this.ack(batch);
      }
    }
  }

  /** Called every second or so: re-send what pi dropped; send what was held. */
  tick() {
    this.flush();
    if (!this.isIdle()) return;
    for (const flight of this.inFlight.values()) {
      if (this.now() - flight.sentAt >= this.resendAfterMs) {
        flight.sentAt = this.now();
        flight.sends += 1;
        this.send(flight.message);
      }
    }
  }

  /** pi's `context` event: drop a later copy of events the model already reads. */
  filterContext(messages) {
    const seen = new Set();
    let dropped = 0;
    const out = messages.filter((m) => {
      if (m?.role !== "custom" || !isOurs(m)) return true;
      const ids = eventIdsOf(m);
      if (ids.length > 0 && ids.every((id) => seen.has(id))) {
        dropped += 1;
        return false;
      }
      for (const id of ids) seen.add(id);
      return true;
    });
    return dropped ? out : null;
  }

  /** Resolves true as soon as a batch is sent (or one is in flight already), false on timeout. */
  waitForSend(timeoutMs, signal) {
    if (this.inFlight.size > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (value) => {
        clearTimeout(timer);
        this.waiters.delete(finish);
        signal?.removeEventListener?.("abort", onAbort);
        resolve(value);
      };
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.waiters.add(finish);
      signal?.addEventListener?.("abort", onAbort, { once: true });
    });
  }

  _accept(ids) {
    for (const id of ids) {
      this.accepted.delete(id);
      this.accepted.add(id);
    }
    while (this.accepted.size > SEEN_CAP) this.accepted.delete(this.accepted.values().next().value);
  }
}
