/**
 * Which failed execs the download runs again (its short read-only commands: a listing, a size): those whose
 * connection broke, as a helper pod just started once reset the first exec in a full test run. A refused exec
 * or a command that ran and failed is never retried.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DownloadError } from './transfer.js';
import { connectionBroke } from './nodes.js';

const errno = (code: string, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code });

describe('connectionBroke', () => {
  it('is true for a reset, refused or cut connection, also as the cause of the download\'s own error', () => {
    assert.equal(connectionBroke(errno('ECONNRESET', 'read ECONNRESET')), true);
    assert.equal(connectionBroke(new DownloadError('cannot read the size: exec into ns/p failed: read ECONNRESET', { cause: errno('ECONNRESET', 'read ECONNRESET') })), true);
    assert.equal(connectionBroke(new DownloadError('cannot list: exec failed', { cause: errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6443') })), true);
    assert.equal(connectionBroke(new DownloadError('x', { cause: new Error('socket hang up') })), true);
    assert.equal(connectionBroke(new DownloadError('cannot read the size: the exec stream closed without an exit status (connection lost?)')), true);
  });
  it('is false for a refused exec, a command that failed, and what is not an error', () => {
    assert.equal(connectionBroke(new DownloadError('cannot list: exec into ns/p was refused (403 Forbidden)', { cause: Object.assign(new Error('Forbidden'), { status: 403 }) })), false);
    assert.equal(connectionBroke(new DownloadError('cannot read the size: stat exited with code 1: No such file or directory')), false);
    assert.equal(connectionBroke(errno('ENOSPC', 'no space left on device')), false);
    assert.equal(connectionBroke('ECONNRESET'), false);
    assert.equal(connectionBroke(undefined), false);
  });
});
