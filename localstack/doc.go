// Package localstack runs jobkit's AWS stack on this machine: LocalStack through Docker for users
// who have it, and, with no account and no Docker, the offline emulator (moto in server mode) plus
// what no emulator provides without Docker — the functions' real binaries run as Lambda runs them
// and the SQS event source mapping that feeds them.
//
// Subpackage awstest gives tests an AWS configuration for whichever endpoint they run against.
package localstack
