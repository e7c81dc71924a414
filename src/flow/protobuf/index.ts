/**
 * The protobuf wire format, written by hand (writer.ts): the one writer under the Hubble
 * GetFlowsResponse encoder (src/server/hubble/encode.ts) and the OTLP logs encoder
 * (src/export/otlp/wire.ts).
 */
export { fieldSize, I32, I64, int64Size, LEN, ProtoWriter, tag, utf8Length, VARINT, varintSize } from './writer.js';
