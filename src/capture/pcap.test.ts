import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { redactMessage, redactUrl } from './outputs/output.js';
import { countPackets } from './pcap.js';

describe('capture files and messages', () => {
  it('counts the packets of pcap (both byte orders) and pcapng files; a truncated last record is not counted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cr-pcap-'));
    const rec = (le: boolean, len: number): Buffer => {
      const h = Buffer.alloc(16);
      if (le) h.writeUInt32LE(len, 8);
      else h.writeUInt32BE(len, 8);
      return Buffer.concat([h, Buffer.alloc(len)]);
    };
    const hdr = (le: boolean): Buffer => {
      const b = Buffer.alloc(24);
      if (le) b.writeUInt32LE(0xa1b2c3d4, 0);
      else b.writeUInt32BE(0xa1b2c3d4, 0);
      return b;
    };
    writeFileSync(join(dir, 'le.pcap'), Buffer.concat([hdr(true), rec(true, 60), rec(true, 1500), rec(true, 40)]));
    writeFileSync(join(dir, 'be.pcap'), Buffer.concat([hdr(false), rec(false, 60), rec(false, 70), rec(false, 100).subarray(0, 50)]));
    const block = (type: number, body: number): Buffer => {
      const b = Buffer.alloc(12 + body);
      b.writeUInt32LE(type, 0);
      b.writeUInt32LE(b.length, 4);
      b.writeUInt32LE(b.length, b.length - 4);
      if (type === 0x0a0d0d0a) b.writeUInt32LE(0x1a2b3c4d, 8);
      return b;
    };
    writeFileSync(join(dir, 'x.pcapng'), Buffer.concat([block(0x0a0d0d0a, 16), block(1, 8), block(6, 40), block(6, 80), block(5, 8), block(3, 20)]));
    assert.equal(await countPackets(join(dir, 'le.pcap')), 3);
    assert.equal(await countPackets(join(dir, 'be.pcap')), 2);
    assert.equal(await countPackets(join(dir, 'x.pcapng')), 3);
    writeFileSync(join(dir, 'no.pcap'), 'hello world, not a capture');
    await assert.rejects(countPackets(join(dir, 'no.pcap')), /not a pcap or pcapng file/);
  });
  it('secrets are taken out of URLs and messages', () => {
    assert.equal(redactUrl('https://acct.blob.core.windows.net/c/x.tar.gz?sv=2024&sig=abc%2Bdef'), 'https://acct.blob.core.windows.net/c/x.tar.gz?<redacted>');
    assert.equal(redactMessage('PUT https://a/c?sv=1&sig=SECRET failed', []), 'PUT https://a/c?sv=<redacted>&sig=<redacted> failed');
    assert.equal(redactMessage('key hunter2 rejected', ['hunter2']), 'key <redacted> rejected');
  });
});
