// Package localstack is the local AWS stack: it runs a CDK app's cloud assembly (cdk.out) on this
// machine, with no AWS account and no Docker, for development and integration tests. It knows
// nothing of jobkit's sample app: point it at any CDK app whose functions are Go, and what runs is
// what that app's templates say. The packages below it do the work; this one holds only this map.
//
// Emulator control. emulator.sh starts and stops the offline emulator on 127.0.0.1:4566 (the port
// LocalStack uses, so the same tests run against either): moto in server mode, run through
// motofix/server.py, which fixes what jobkit's stack trips over in moto (FIFO group order, long
// polls, throughput, thread safety), with versions locked in requirements.lock. Package emulator
// reuses an endpoint that already answers or starts one with emulator.sh. localstack.sh starts
// LocalStack on the same port: in Docker (docker-compose.yml) when an engine answers, else its
// core package in host mode (lsfix), with DynamoDB Local from Maven; javaemu.sh starts DynamoDB
// Local and ElasticMQ on their own.
//
// What no emulator runs without Docker, and AWS's own behaviour is copied from its documentation:
//   - lambdaruntime runs a function's real bootstrap binary behind a local Lambda Runtime API, one
//     process per execution environment, timeout enforced;
//   - esm is the SQS event source mapping that polls a queue and invokes a function, with
//     ReportBatchItemFailures as AWS documents it;
//   - schedfire fires EventBridge Scheduler schedules, which the emulators store but never fire.
//
// Putting an app on it. deploy reads the cloud assembly and creates its stacks on the emulator's
// CloudFormation (what it serves), with the Scheduler API (what it skips), and resolves the
// functions and their mappings; devstack runs a deployment: a lambdaruntime per function, an esm
// poller per mapping, schedfire for its schedule groups.
//
// For tests: awstest gives a test an AWS configuration for whichever endpoint it runs against
// (the emulator, LocalStack or AWS), with unique names and cleanup; faultproxy sits between SDK
// clients and the endpoint, counts requests and answers a chosen fraction with throttling errors.
//
// conformance checks an emulator against the SQS and DynamoDB behaviours AWS documents and
// jobkit relies on (`make conformance`, docs/emulators.md).
//
// localstack imports the library (jobs, idempotency, scheduler) and its own packages only; the
// programs that drive the sample app (`make dev`, chaos, bench) live in internal/.
package localstack
