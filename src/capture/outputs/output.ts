/** Where a capture's tarball goes: each output delivers the file and says where it put it. */
import { CaptureError } from '../provider.js';

export interface Output {
  /** `hostPath`, `persistentVolumeClaim`, `blob`, `s3`: for logs and the report. */
  readonly name: string;
  /** Copies or uploads the tarball; resolves with its location (never holding a secret). */
  deliver(file: string, name: string): Promise<string>;
}

/** Removes the query (a SAS token) and any user info from a URL, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?<redacted>' : ''}`;
  } catch {
    return '<unparsable URL>';
  }
}

/** A message with any SAS signature or query string of `secretUrl` taken out. */
export function redactMessage(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('<redacted>');
  return out.replace(/([?&](sig|se|sp|sv|st|spr|srt|ss|sr|skoid|sktid|skt|ske|sks|skv|X-Amz-Signature|X-Amz-Credential)=)[^&\s"']*/gi, '$1<redacted>');
}

export { CaptureError };
