package main
import ("testing";"context";"fmt";"time";"github.com/aws/aws-sdk-go-v2/aws";"github.com/aws/aws-sdk-go-v2/service/sqs";"github.com/jobkit-go/jobkit/localstack/awstest")
func TestProbeSend(t *testing.T){
 ctx:=context.Background(); cfg,_:=awstest.LoadConfig(ctx); c:=sqs.NewFromConfig(cfg)
 q,err:=createBenchQueue(ctx,c,"probe",nil); if err!=nil {t.Fatal(err)}; defer deleteBenchQueue(ctx,c,q)
 for r:=0;r<3;r++{ s:=time.Now(); for i:=0;i<30;i++{ if _,err:=c.SendMessage(ctx,&sqs.SendMessageInput{QueueUrl:aws.String(q),MessageBody:aws.String("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")}); err!=nil{t.Fatal(err)} }; fmt.Println("send ms", time.Since(s).Seconds()*1000/30) }
 s:=time.Now(); for i:=0;i<30;i++{ c.GetQueueUrl(ctx,&sqs.GetQueueUrlInput{QueueName:aws.String("nonexist")}) }; fmt.Println("getqueueurl ms", time.Since(s).Seconds()*1000/30)
}
