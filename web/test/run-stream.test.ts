// How long a run's stream keeps reconnecting: a server that says it is restarting (close 1012)
// is waited for ~2 minutes, a plain drop ~23 s (web/src/api.ts).
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { type Api, RunStream } from "../src/api";

/** A socket whose server is away: each one closes at once, the first with `firstCode`. */
function awayServer(firstCode: number): { made: () => number } {
  let made = 0;
  class AwaySocket {
    onopen: (() => void) | null = null;
    onmessage: ((m: { data: string }) => void) | null = null;
    onerror: (() => void) | null = null;
    onclose: ((ev: { code: number; reason: string }) => void) | null = null;
    constructor() {
      made += 1;
      const code = made === 1 ? firstCode : 1006;
      queueMicrotask(() => this.onclose?.({ code, reason: "" }));
    }
    send(): void {}
    close(): void {}
  }
  Object.assign(globalThis, { WebSocket: AwaySocket, window: globalThis });
  return { made: () => made };
}

async function triesBeforeGivingUp(firstCode: number): Promise<{ tries: number; seconds: number }> {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const server = awayServer(firstCode);
    let ended: string | null = null;
    const api = { eventsUrl: () => "ws://127.0.0.1/api/runs/r/events" } as unknown as Api;
    new RunStream(api, "r", { onEvents: () => {}, onEnd: (reason) => (ended = reason), lastSeq: () => -1 });
    let seconds = 0;
    while (ended === null && seconds < 600) {
      await Promise.resolve();
      mock.timers.tick(250);
      seconds += 0.25;
    }
    assert.equal(ended, "failed");
    return { tries: server.made(), seconds };
  } finally {
    mock.timers.reset();
  }
}

test("a stream dropped by a fault retries for ~23 s; one closed by a restarting server for ~2 minutes", async () => {
  const fault = await triesBeforeGivingUp(1006);
  assert.equal(fault.tries, 9);
  assert.ok(fault.seconds > 20 && fault.seconds < 30, String(fault.seconds));
  const restart = await triesBeforeGivingUp(1012);
  assert.equal(restart.tries, 31);
  assert.ok(restart.seconds > 110 && restart.seconds < 150, String(restart.seconds));
});
