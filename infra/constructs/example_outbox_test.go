package constructs_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/infra/constructs"
)

// The transactional outbox's forwarder on the state table's stream: services write jobs in their
// own DynamoDB transactions (package jobs/outbox), and the forwarder sends them to the queues it
// is given, and only those. The construct turns the table's stream on.
func ExampleNewOutboxForwarder() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Accounts"), nil)

	table := constructs.NewIdempotencyTable(stack, "State", nil)
	emails := constructs.NewJobQueue(stack, "Email", nil)
	fw := constructs.NewOutboxForwarder(stack, "Outbox", &constructs.OutboxForwarderProps{
		Source: constructs.GoSource{ModuleDir: "../.."}, // jobkit's own forwarder, cmd/jobkit-outbox
		Table:  table,
		Queues: []awssqs.IQueue{emails.Queue},
	})
	app.Synth(nil)

	fmt.Println("stream view:", constructs.OutboxStreamViewType)
	fmt.Println("invoked for:", (*constructs.OutboxStreamFilter())["pattern"])
	fmt.Println("alarms:", *fw.ErrorsAlarm.Node().Id(), *fw.IteratorAgeAlarm.Node().Id(), *fw.DLQDepthAlarm.Node().Id())
	// Output:
	// stream view: NEW_IMAGE
	// invoked for: {"dynamodb":{"Keys":{"id":{"S":[{"prefix":"outbox#"}]}}},"eventName":["INSERT"]}
	// alarms: ErrorsAlarm IteratorAgeAlarm DLQDepthAlarm
}
