# The onEvent handler of a custom resource behind CDK's Provider framework: the framework's own
# function invokes it through the Lambda API and answers CloudFormation with what it returns.
def handler(event, context):
    name = event["ResourceProperties"]["Name"]
    return {"PhysicalResourceId": "greeting-" + name, "Data": {"Greeting": "hello " + name}}
