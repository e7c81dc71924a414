import assert from 'node:assert/strict';
import { it } from 'node:test';
import { eventsPerBuffer, sessionLossTracker } from './source.js';

it('session losses: EventsLost as is, each lost real-time buffer as the events a delivered buffer held when it was seen', () => {
  const lost = sessionLossTracker();
  const q = (eventsLost: number, realTimeBuffersLost: number, perBuffer: number): number => lost({ eventsLost, realTimeBuffersLost, logBuffersLost: 0 }, perBuffer);
  assert.equal(q(0, 0, 0), 0);
  assert.equal(q(3, 2, 0), 3, 'no buffer delivered yet: the lost buffers wait for a measure');
  assert.equal(q(3, 2, 99.6), 3 + 2 * 100);
  assert.equal(q(4, 2, 10), 4 + 200, 'buffers already counted keep their measure');
  assert.equal(q(4, 3, 10), 4 + 200 + 10);
  assert.equal(eventsPerBuffer({ buffers: 0, bufferEvents: 0 }), 0);
  assert.equal(eventsPerBuffer({ buffers: 4, bufferEvents: 402 }), 100.5);
});
