// Room codes typed by people: read the way the server reads them (server/rooms.py normalize_code).
import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizeCode, spacedCode } from "../src/room-client";

test("codes are read in any case, with spaces or dashes", () => {
  assert.equal(normalizeCode("K7MQ2X"), "K7MQ2X");
  assert.equal(normalizeCode(" k7m-q2x "), "K7MQ2X");
  assert.equal(normalizeCode("k7m q2x"), "K7MQ2X");
});

test("what cannot be a code is refused", () => {
  for (const text of ["K7MQ2", "K7MQ2XY", "K7M0Q2", "KOMQ2X", "K1MQ2X", "KIMQ2X", "KLMQ2X", "", "<b>!!</b>"]) {
    assert.equal(normalizeCode(text), null, text);
  }
});

test("codes are shown in two groups of three", () => {
  assert.equal(spacedCode("K7MQ2X"), "K7M Q2X");
});
