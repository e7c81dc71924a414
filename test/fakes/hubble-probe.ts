import * as grpc from '@grpc/grpc-js';
import { rawStreamOf, type HubbleProtos } from '../../src/server/hubble/index.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface RawStreamProbe {
  /** What rawStreamOf found under a real grpc-js GetFlows call (undefined: none, the server would fall back to grpc-js writes). */
  readonly found: unknown;
  /** The client call's error, undefined when it ended cleanly. */
  readonly error: unknown;
}

/**
 * One GetFlows call from a real grpc-js client to a probe grpc-js server bound on `host` with `server`
 * credentials: whether the Hubble server's raw-writes path can reach the call's HTTP/2 stream.
 */
export async function probeRawStream(protos: Pick<HubbleProtos, 'observer' | 'ObserverClient'>, host: string, server: grpc.ServerCredentials,
  client: grpc.ChannelCredentials, clientOptions: grpc.ClientOptions = {}): Promise<RawStreamProbe> {
  const probe = new grpc.Server();
  let found: unknown;
  probe.addService(protos.observer, {
    GetFlows: (call: grpc.ServerWritableStream<Obj, Obj>) => {
      found = rawStreamOf(call);
      call.end();
    },
  });
  const port = await new Promise<number>((res, rej) => probe.bindAsync(`${host}:0`, server, (e, p) => (e ? rej(e) : res(p))));
  const c = new protos.ObserverClient(`${host}:${port}`, client, clientOptions) as unknown as Obj;
  try {
    const error = await new Promise<unknown>((res) => {
      const call = c['GetFlows']({});
      call.on('data', () => undefined);
      call.on('end', () => res(undefined));
      call.on('error', res);
    });
    return { found, error };
  } finally {
    c['close']();
    probe.forceShutdown();
  }
}

/** Every message of a server-streaming call, and its error (undefined when it ended cleanly). */
export function collectStream(call: grpc.ClientReadableStream<Obj>): Promise<{ msgs: Obj[]; err: grpc.ServiceError | undefined }> {
  return new Promise((resolve) => {
    const msgs: Obj[] = [];
    call.on('data', (m: Obj) => msgs.push(m));
    call.on('error', (err: grpc.ServiceError) => resolve({ msgs, err }));
    call.on('end', () => resolve({ msgs, err: undefined }));
  });
}
