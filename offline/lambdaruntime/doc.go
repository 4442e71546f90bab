// Package lambdaruntime runs a Lambda function's real bootstrap binary on this machine the way the
// Lambda service does, for the offline stack.
//
// Each execution environment is a child process started with the function's environment and the
// variables Lambda reserves (AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME, AWS_REGION, the
// credentials, ...). The process talks to its own Lambda Runtime API server, served by this package
// over HTTP on 127.0.0.1 with the documented paths under /2018-06-01/runtime/: invocation/next (a
// long poll carrying Lambda-Runtime-Aws-Request-Id, Lambda-Runtime-Deadline-Ms,
// Lambda-Runtime-Invoked-Function-Arn and Lambda-Runtime-Trace-Id), invocation/{id}/response,
// invocation/{id}/error and init/error.
//
// As on Lambda, an environment runs one invocation at a time; concurrency means more environments,
// up to Function.MaxInstances. The timeout is enforced: at the deadline the whole process group is
// killed, the invocation reports Timeout and the next invocation starts a fresh process (a cold
// start). A process that exits during an invocation reports Crash and is replaced the same way.
//
// Runtime API reference: https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html
package lambdaruntime
