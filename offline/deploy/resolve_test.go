package deploy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func testResolver() *resolver {
	return &resolver{
		stack: "S", stackID: "arn:aws:cloudformation:eu-west-1:111122223333:stack/S/1", region: "eu-west-1", account: "111122223333",
		params:   map[string]any{"Env": "prod", "Sizes": []any{"s", "m"}},
		mappings: map[string]any{"ByEnv": map[string]any{"prod": map[string]any{"Size": "large"}}},
		condDefs: map[string]any{
			"IsProd":   map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Env"}, "prod"}},
			"NotProd":  map[string]any{"Fn::Not": []any{map[string]any{"Condition": "IsProd"}}},
			"Both":     map[string]any{"Fn::And": []any{map[string]any{"Condition": "IsProd"}, map[string]any{"Condition": "NotProd"}}},
			"Either":   map[string]any{"Fn::Or": []any{map[string]any{"Condition": "IsProd"}, map[string]any{"Condition": "NotProd"}}},
			"SelfLoop": map[string]any{"Fn::Not": []any{map[string]any{"Condition": "SelfLoop"}}},
		},
		ref: func(id string) (string, bool) {
			if id == "Queue" {
				return "https://q/Queue", true
			}
			return "", false
		},
		getAtt: func(id, attr string) (string, error) {
			if id == "Queue" && attr == "Arn" {
				return "arn:aws:sqs:eu-west-1:111122223333:Queue", nil
			}
			return "", fmt.Errorf("no %s.%s", id, attr)
		},
		importValue: func(n string) (string, bool) {
			if n == "Other:Url" {
				return "https://q/Other", true
			}
			return "", false
		},
	}
}

func eval(t *testing.T, r *resolver, doc string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v))
	out, err := r.eval(v, "test")
	require.NoError(t, err)
	return out
}

func TestResolverIntrinsics(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, want string }{
		{`{"Ref":"Queue"}`, `"https://q/Queue"`},
		{`{"Ref":"Env"}`, `"prod"`},
		{`{"Ref":"AWS::Region"}`, `"eu-west-1"`},
		{`{"Ref":"AWS::AccountId"}`, `"111122223333"`},
		{`{"Ref":"AWS::Partition"}`, `"aws"`},
		{`{"Ref":"AWS::URLSuffix"}`, `"amazonaws.com"`},
		{`{"Ref":"AWS::StackName"}`, `"S"`},
		{`{"Fn::GetAtt":["Queue","Arn"]}`, `"arn:aws:sqs:eu-west-1:111122223333:Queue"`},
		{`{"Fn::GetAtt":"Queue.Arn"}`, `"arn:aws:sqs:eu-west-1:111122223333:Queue"`},
		{`{"Fn::ImportValue":"Other:Url"}`, `"https://q/Other"`},
		{`{"Fn::ImportValue":{"Fn::Join":[":",["Other","Url"]]}}`, `"https://q/Other"`},
		{`{"Fn::Join":["-",["a",{"Ref":"Env"},3]]}`, `"a-prod-3"`},
		{`{"Fn::Sub":"${AWS::Region}:${Queue}:${Queue.Arn}:${!Literal}:${Env}"}`,
			`"eu-west-1:https://q/Queue:arn:aws:sqs:eu-west-1:111122223333:Queue:${Literal}:prod"`},
		{`{"Fn::Sub":["${A}-${Env}",{"A":{"Ref":"Queue"}}]}`, `"https://q/Queue-prod"`},
		{`{"Fn::Select":[1,{"Fn::Split":[",","x,y,z"]}]}`, `"y"`},
		{`{"Fn::Select":["0",{"Ref":"Sizes"}]}`, `"s"`},
		{`{"Fn::If":["IsProd","yes","no"]}`, `"yes"`},
		{`{"Fn::If":["NotProd","yes","no"]}`, `"no"`},
		{`{"Fn::If":["Both","yes","no"]}`, `"no"`},
		{`{"Fn::If":["Either","yes","no"]}`, `"yes"`},
		{`{"Fn::FindInMap":["ByEnv",{"Ref":"Env"},"Size"]}`, `"large"`},
		{`{"Fn::Base64":"hi"}`, `"aGk="`},
		{`{"Fn::Select":[0,{"Fn::GetAZs":""}]}`, `"eu-west-1a"`},
		{`{"a":{"Ref":"AWS::NoValue"},"b":[1,{"Ref":"AWS::NoValue"},2]}`, `{"b":[1,2]}`},
		{`{"Fn::If":["IsProd",{"Ref":"AWS::NoValue"},"x"]}`, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.doc, func(t *testing.T) {
			t.Parallel()
			got := eval(t, testResolver(), tc.doc)
			if _, ok := got.(noValue); ok {
				got = nil
			}
			b, err := json.Marshal(got)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestResolverErrors(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"Ref":"Nope"}`,
		`{"Fn::GetAtt":["Queue","Nope"]}`,
		`{"Fn::ImportValue":"Nope"}`,
		`{"Fn::Sub":"${Nope}"}`,
		`{"Fn::Sub":"${unterminated"}`,
		`{"Fn::Select":[5,["a"]]}`,
		`{"Fn::If":["NoSuchCondition","a","b"]}`,
		`{"Fn::If":["SelfLoop","a","b"]}`,
		`{"Fn::Transform":{}}`,
		`{"Fn::Join":["-","notalist"]}`,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v))
		_, err := testResolver().eval(v, "Resources.X")
		var resErr *ResolveError
		require.ErrorAs(t, err, &resErr, doc)
		require.Equal(t, "S", resErr.Stack)
	}
}
