// Package localstack runs jobkit's AWS stack on this machine: LocalStack through Docker for users
// who have it, and, with no account and no Docker, the offline emulator (moto in server mode) plus
// what no emulator provides without Docker — the functions' real binaries run as Lambda runs them
// and the SQS event source mapping that feeds them.
//
// Subpackages: lambdaruntime runs a function's binary behind a local Lambda Runtime API; esm is
// the SQS event source mapping; deploy creates a synthesized cloud assembly on the emulator;
// devstack runs a deployment (functions, mappings, schedules); demo drives it end to end with a
// demo workload and counts what became of every job (`jobkit dev`, `make dev`); awstest gives
// tests an AWS configuration for whichever endpoint they run against; conformance checks an
// emulator against the SQS and DynamoDB behaviours AWS documents and jobkit relies on
// (`make conformance`, docs/emulators.md).
package localstack
