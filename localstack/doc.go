// Package localstack is the local AWS that jobkit starts and patches: the emulators its offline
// stack and its tests run against, with no AWS account and, in host mode, no Docker. It holds
// only this map; jobkit's own emulation of what the emulators do not do (Lambda, event source
// mappings, Scheduler firing, ECS tasks, deploying a cloud assembly) is in offline/.
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
// conformance checks an emulator against the SQS and DynamoDB behaviours AWS documents and
// jobkit relies on (`make conformance`, docs/emulators.md).
//
// localstack imports the library (jobs, idempotency, scheduler) and its own packages only.
package localstack
