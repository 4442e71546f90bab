package awstest

import (
	"archive/zip"
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// EventSourceMapping creates, on the endpoint's Lambda API, a function (a role Lambda may assume,
// and a zip whose bootstrap does nothing) and an SQS event source mapping of q to it, enabled or
// not; all three go when the test ends. It returns the mapping's UUID. Nothing runs the function:
// the test must send nothing to q while the mapping is enabled.
func EventSourceMapping(tb testing.TB, cfg aws.Config, q Queue, enabled bool) string {
	tb.Helper()
	ctx := context.Background()
	name := Name(tb, "fn")
	roles := iam.NewFromConfig(cfg)
	role, err := roles.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name),
		AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`)})
	if err != nil {
		tb.Fatalf("awstest: create role %s: %v", name, err)
	}
	Cleanup(tb, "role "+name, func(ctx context.Context) error {
		_, err := roles.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String(name)})
		return err
	})
	var code bytes.Buffer
	zw := zip.NewWriter(&code)
	w, _ := zw.Create("bootstrap")
	_, _ = w.Write([]byte("#!/bin/sh\nexit 1\n"))
	_ = zw.Close()
	lam := lambda.NewFromConfig(cfg)
	if _, err := lam.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(name),
		Runtime: lambdatypes.RuntimeProvidedal2023, Handler: aws.String("bootstrap"), Role: role.Role.Arn,
		Code: &lambdatypes.FunctionCode{ZipFile: code.Bytes()}}); err != nil {
		tb.Fatalf("awstest: create function %s: %v", name, err)
	}
	Cleanup(tb, "function "+name, func(ctx context.Context) error {
		_, err := lam.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(name)})
		return err
	})
	m, err := lam.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String(name),
		EventSourceArn: aws.String(q.ARN), Enabled: aws.Bool(enabled)})
	if err != nil {
		tb.Fatalf("awstest: create event source mapping of %s: %v", q.Name, err)
	}
	Cleanup(tb, "event source mapping of "+name, func(ctx context.Context) error {
		_, err := lam.DeleteEventSourceMapping(ctx, &lambda.DeleteEventSourceMappingInput{UUID: m.UUID})
		return err
	})
	return aws.ToString(m.UUID)
}
