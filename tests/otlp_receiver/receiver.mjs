// An OTLP/HTTP JSON receiver for the telemetry tests (tests/telemetry/
// otlp_decoder_test.cpp, otlp_metric_decoder_test.cpp). It decodes each
// POST /v1/traces and /v1/metrics with the protocol
// definitions the OpenTelemetry project publishes on npm — the protobuf
// messages generated from opentelemetry-proto inside
// @opentelemetry/otlp-transformer — not with rules of our own:
//
//   1. the body must be JSON sent as application/json;
//   2. trace and span ids are hex in OTLP/JSON (not protobuf's base64): each
//      is checked for its length and digits and turned into bytes;
//   3. ExportTraceServiceRequest.fromObject() (ExportMetricsServiceRequest
//      for /v1/metrics) builds the message, verify()
//      checks every field's type, and the message goes through the binary
//      protobuf encoding and back, as a collector would store it;
//   4. every field the request sent must still be there, with the same
//      value, after decoding: a misspelt or misplaced field, an enum sent
//      by name or a malformed number (which fromObject() would silently
//      ignore or zero) is reported.
//
// Prints "listening <port>" once, then for each request one line:
// "decoded <json>" for traces, "decoded-metrics <json>" for metrics (the
// decoded request, ids as hex, 64-bit integers as strings, enums as
// numbers) or "rejected <reason>". Answers 200 {} or 400.
// A missing node_modules fails at the import, before "listening".
import { createServer } from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { opentelemetry } = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const messages = {
  '/v1/traces': { type: opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest, prefix: 'decoded' },
  '/v1/metrics': { type: opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest, prefix: 'decoded-metrics' },
};

const idFields = { traceId: 16, spanId: 8, parentSpanId: 8 };

function hexToBytes(hex, size, where) {
  if (typeof hex !== 'string' || !new RegExp(`^[0-9a-fA-F]{${size * 2}}$`).test(hex)) {
    throw new Error(`${where} is not ${size * 2} hex digits: ${JSON.stringify(hex)}`);
  }
  return Buffer.from(hex, 'hex');
}

// OTLP/JSON's ids, hex, into the bytes the protobuf messages hold.
function idsToBytes(value, where) {
  if (Array.isArray(value)) return value.map((item, i) => idsToBytes(item, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    const size = idFields[key];
    if (size && !(key === 'parentSpanId' && item === '')) out[key] = hexToBytes(item, size, `${where}.${key}`);
    else out[key] = idsToBytes(item, `${where}.${key}`);
  }
  return out;
}

// Decoded bytes back to hex, for the report.
function bytesToHex(value) {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (Array.isArray(value)) return value.map(bytesToHex);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, bytesToHex(item)]));
}

// Fields of `sent` that the decoded message lacks or holds with another
// value: fromObject() ignores a field it does not know and turns a value
// of the wrong kind (an enum by name, "abc" for a 64-bit integer) into a
// default, so both are checked here. Values are compared as text: a 64-bit
// integer is a string on both sides, "NaN" and NaN read the same.
function differences(sent, decoded, where, found) {
  if (Array.isArray(sent)) {
    if (!Array.isArray(decoded) || decoded.length !== sent.length) found.push(`${where} (length)`);
    else sent.forEach((item, i) => differences(item, decoded[i], `${where}[${i}]`, found));
  } else if (sent !== null && typeof sent === 'object') {
    for (const [key, item] of Object.entries(sent)) {
      if (decoded === null || typeof decoded !== 'object' || !(key in decoded)) found.push(`${where}.${key} (unknown)`);
      else differences(item, decoded[key], `${where}.${key}`, found);
    }
  } else if (String(sent) !== String(decoded)) {
    found.push(`${where} (sent ${JSON.stringify(sent)}, decoded ${JSON.stringify(String(decoded))})`);
  }
  return found;
}

function decode(body, Request) {
  const sent = JSON.parse(body);
  const message = Request.fromObject(idsToBytes(sent, 'request'));
  const invalid = Request.verify(message);
  if (invalid) throw new Error(`not an ${Request.name}: ${invalid}`);
  const wire = Request.encode(message).finish();
  const decoded = Request.toObject(Request.decode(wire), {
    longs: String,
    enums: Number,
    defaults: true,
  });
  const report = bytesToHex(decoded);
  const found = differences(sent, report, 'request', []);
  if (found.length > 0) throw new Error(`not as the protocol defines it: ${found.join(', ')}`);
  return report;
}

function answer(response, status, body) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    try {
      const expected = messages[request.url];
      if (request.method !== 'POST' || !expected) {
        throw new Error(`unexpected ${request.method} ${request.url}`);
      }
      if (request.headers['content-type'] !== 'application/json') {
        throw new Error(`content-type is ${JSON.stringify(request.headers['content-type'])}`);
      }
      const decoded = decode(Buffer.concat(chunks).toString('utf8'), expected.type);
      process.stdout.write(`${expected.prefix} ${JSON.stringify(decoded)}\n`);
      answer(response, 200, {});
    } catch (error) {
      process.stdout.write(`rejected ${error.message.replace(/\n/g, ' ')}\n`);
      answer(response, 400, { error: error.message });
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
