// A Lambda runtime for Node.js functions run offline (package lambdaruntime): the Runtime API
// loop — invocation/next, then the handler's response or error — around the handler _HANDLER
// names ("file.export", the file under LAMBDA_TASK_ROOT as .js, .mjs or .cjs). Async handlers and
// callback handlers (three parameters) both work. Lambda's own Node.js runtime adds what the
// machine's Node.js lacks (the AWS SDK among them): NODE_PATH names where this machine keeps it
// (devstack's NodeModules), for the handlers that require it.
import { existsSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const api = `http://${process.env.AWS_LAMBDA_RUNTIME_API}/2018-06-01/runtime`;

// Requests for AWS's hosts. Offline, the SDK calls the emulator (AWS_ENDPOINT_URL), but some
// requests name AWS's host themselves: the SDK for JavaScript sends to a queue URL's host, and the
// emulator's CloudFormation gives queue URLs on SQS's public host. Such a request goes to the
// emulator, its Host header the emulator's (a virtual-hosted S3 bucket moves into the path).
//
// A custom resource's answer. On AWS its ResponseURL is a presigned S3 URL, and CDK's providers
// PUT to it with https.request({ hostname, path }), the URL's port dropped (or port 443). Offline
// the answer is served on this machine, on the port devstack gives (JOBKIT_CFN_RESPONSE_PORT):
// such a request for 127.0.0.1 goes there, in plain HTTP.
//
// https.request and https.get are both patched, and the ES module exports synced, so that
// `import { request } from 'node:https'` sees the patch too.
const endpoint = process.env.AWS_ENDPOINT_URL ? new URL(process.env.AWS_ENDPOINT_URL) : null;
const awsHost = /\.amazonaws\.com(\.cn)?$|\.api\.aws$/;
const s3VirtualHost = /^(.+)\.s3[.-]/;
const responsePort = Number(process.env.JOBKIT_CFN_RESPONSE_PORT);

function redirected(options) {
  if (!options || typeof options !== 'object' || options instanceof URL) return null;
  const host = options.hostname ?? options.host ?? ''; // the SDK's handler sets host
  if (responsePort && (host === '127.0.0.1' || host === 'localhost') && (!options.port || Number(options.port) === 443)) {
    return [http, { ...options, protocol: 'http:', host: undefined, hostname: '127.0.0.1', port: responsePort, agent: undefined }];
  }
  if (endpoint && awsHost.test(host)) {
    let path = options.path ?? '/';
    const bucket = s3VirtualHost.exec(host);
    if (bucket) path = '/' + bucket[1] + (path.startsWith('/') ? path : '/' + path);
    return [endpoint.protocol === 'http:' ? http : https, {
      ...options, protocol: endpoint.protocol, host: undefined, hostname: endpoint.hostname, port: endpoint.port || undefined,
      path, agent: undefined, headers: { ...options.headers, host: endpoint.host },
    }];
  }
  return null;
}

const httpsRequest = https.request;
https.request = function (options, ...rest) {
  const to = redirected(options);
  return to ? to[0].request(to[1], ...rest) : httpsRequest.call(this, options, ...rest);
};
https.get = function (...args) {
  const req = https.request(...args);
  req.end();
  return req;
};
syncBuiltinESMExports();

function errorBody(err) {
  return JSON.stringify({
    errorType: err?.name ?? 'Error',
    errorMessage: err?.message ?? String(err),
    stackTrace: String(err?.stack ?? '').split('\n'),
  });
}

// nextInvocation long-polls invocation/next. Not fetch: its 300 s headers timeout would end an
// idle environment, which the Runtime API answers only when an event comes.
function nextInvocation() {
  return new Promise((resolve, reject) => {
    http.get(`${api}/invocation/next`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ headers: res.headers, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function post(url, body) {
  await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
}

async function loadHandler() {
  const spec = process.env._HANDLER ?? '';
  const dot = spec.lastIndexOf('.');
  if (dot < 0) throw new Error(`_HANDLER ${JSON.stringify(spec)} is not file.export`);
  const base = path.join(process.env.LAMBDA_TASK_ROOT, spec.slice(0, dot));
  const file = ['.js', '.mjs', '.cjs'].map((ext) => base + ext).find((f) => existsSync(f));
  if (!file) throw new Error(`no ${base}.js, .mjs or .cjs for _HANDLER ${spec}`);
  const mod = await import(pathToFileURL(file).href);
  const name = spec.slice(dot + 1);
  const fn = mod[name] ?? mod.default?.[name];
  if (typeof fn !== 'function') throw new Error(`${file} exports no function ${name}`);
  return fn;
}

let handler;
try {
  handler = await loadHandler();
} catch (err) {
  await post(`${api}/init/error`, errorBody(err));
  process.exit(1);
}

for (;;) {
  const next = await nextInvocation();
  const id = next.headers['lambda-runtime-aws-request-id'];
  const deadline = Number(next.headers['lambda-runtime-deadline-ms']);
  const event = JSON.parse(next.body);
  const context = {
    awsRequestId: id,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: next.headers['lambda-runtime-invoked-function-arn'],
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => deadline - Date.now(),
    callbackWaitsForEmptyEventLoop: true,
  };
  try {
    const result = handler.length >= 3
      ? await new Promise((resolve, reject) => handler(event, context, (err, out) => (err ? reject(err) : resolve(out))))
      : await handler(event, context);
    let body;
    try {
      body = JSON.stringify(result ?? null);
    } catch (err) {
      err.name = 'Runtime.MarshalError';
      throw err;
    }
    await post(`${api}/invocation/${id}/response`, body);
  } catch (err) {
    await post(`${api}/invocation/${id}/error`, errorBody(err));
  }
}
