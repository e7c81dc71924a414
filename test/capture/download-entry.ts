/**
 * A private entry for tests that need a real process (signals): `node download-entry.js <flags>`
 * runs `kubectl-retina capture download <flags>` (bin/kubectl-retina belongs to the dispatcher).
 */
import { runDownload } from '../../src/cli/capture/download.js';

process.exitCode = await runDownload(process.argv.slice(2));
