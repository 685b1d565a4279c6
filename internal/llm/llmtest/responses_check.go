package llmtest

import (
	"fmt"
	"net/http"
)

// checkResponses is NewResponses' request check.
func checkResponses(r *http.Request, body []byte) *refusal {
	if r.Method != http.MethodPost || (r.URL.Path != "/responses" && r.URL.Path != "/v1/responses") {
		return nil
	}
	if err := CheckResponses(body); err != nil {
		return openAIRefusal(err)
	}
	return nil
}

// CheckResponses returns why the Responses API would refuse a request
// with this body, or nil. NewResponses' doc lists the rules and their
// sources.
func CheckResponses(body []byte) error {
	req, err := decodeObject(body)
	if err != nil {
		return badParam("", "We could not parse the JSON body of your request. (%v)", err)
	}
	if m, _ := asString(req["model"]); m == "" {
		return badParam("model", "Missing required parameter: 'model'.")
	}
	if v, ok := req["max_output_tokens"]; ok && v != nil {
		if n, ok := asInt(v); !ok || n < 1 {
			return badParam("max_output_tokens", "Invalid 'max_output_tokens': expected a positive integer.")
		}
	}
	if v, ok := req["instructions"]; ok && v != nil {
		if _, ok := asString(v); !ok {
			return badParam("instructions", "Invalid type for 'instructions': expected a string, but got %s instead.", kind(v))
		}
	}
	if v, ok := req["include"]; ok && v != nil {
		list, ok := asArray(v)
		if !ok {
			return badParam("include", "Invalid type for 'include': expected an array.")
		}
		for i, x := range list {
			switch x {
			case "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
				"message.input_image.image_url", "computer_call_output.output.image_url",
				"code_interpreter_call.outputs", "reasoning.encrypted_content", "message.output_text.logprobs":
			default:
				return badParam(fmt.Sprintf("include[%d]", i), "Invalid value: '%v' for 'include[%d]'.", x, i)
			}
		}
	}
	if v, ok := req["reasoning"]; ok && v != nil {
		r, ok := asObject(v)
		if !ok {
			return badParam("reasoning", "Invalid type for 'reasoning': expected an object.")
		}
		switch e := r["effort"]; e {
		case nil, "none", "minimal", "low", "medium", "high", "xhigh", "max":
		default:
			return badParam("reasoning.effort", "Invalid value: '%v'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high' and 'xhigh'.", e)
		}
		switch s := r["summary"]; s {
		case nil, "auto", "concise", "detailed":
		default:
			return badParam("reasoning.summary", "Invalid value: '%v'. Supported values are: 'auto', 'concise' and 'detailed'.", s)
		}
	}
	if err := responsesTools(req["tools"]); err != nil {
		return err
	}
	stored := req["store"] != false // store defaults to true
	_, chained := asString(req["previous_response_id"])
	switch in := req["input"].(type) {
	case nil, string:
		return nil
	case []any:
		return responsesInput(in, stored, chained)
	default:
		return badParam("input", "Invalid type for 'input': expected a string or an array of input items, but got %s instead.", kind(in))
	}
}

func responsesTools(v any) error {
	if v == nil {
		return nil
	}
	tools, ok := asArray(v)
	if !ok {
		return badParam("tools", "Invalid type for 'tools': expected an array.")
	}
	for i, t := range tools {
		tool, ok := asObject(t)
		if !ok {
			return badParam(fmt.Sprintf("tools[%d]", i), "Invalid type for 'tools[%d]': expected an object.", i)
		}
		if typ, _ := asString(tool["type"]); typ != "function" {
			continue // built-in tools have their own shapes
		}
		name, _ := asString(tool["name"])
		if !functionName.MatchString(name) {
			return badParam(fmt.Sprintf("tools[%d].name", i), "Invalid 'tools[%d].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$' (got %q).", i, name)
		}
		if p, ok := tool["parameters"]; ok && p != nil {
			if _, ok := asObject(p); !ok {
				return badParam(fmt.Sprintf("tools[%d].parameters", i), "Invalid type for 'tools[%d].parameters': expected an object.", i)
			}
			if err := openAIParameters(name, p); err != nil {
				return &openAIError{param: fmt.Sprintf("tools[%d].parameters", i), msg: err.Error(), code: "invalid_function_parameters"}
			}
		}
	}
	return nil
}

// responsesInput checks the input items. stored is whether the request
// is stored (store not false); chained whether it continues a previous
// response, whose items the fake cannot see.
func responsesInput(items []any, stored, chained bool) error {
	calls := map[string]bool{} // call_ids of the function_call items so far
	ids := map[string]bool{}   // item ids
	for i, x := range items {
		item, ok := asObject(x)
		at := fmt.Sprintf("input[%d]", i)
		if !ok {
			return badParam(at, "Invalid type for '%s': expected an object.", at)
		}
		if id, _ := asString(item["id"]); id != "" {
			if ids[id] {
				return badParam("input", "Duplicate item found with id %s. Remove duplicate items from your input and try again.", id)
			}
			ids[id] = true
		}
		typ, _ := asString(item["type"])
		if typ == "" && item["role"] != nil {
			typ = "message" // the type of a message item may be left out
		}
		switch typ {
		case "message":
			if err := responsesMessage(at, item); err != nil {
				return err
			}
		case "function_call":
			id, _ := asString(item["call_id"])
			if id == "" {
				return badParam(at+".call_id", "Missing required parameter: '%s.call_id'.", at)
			}
			if name, _ := asString(item["name"]); name == "" {
				return badParam(at+".name", "Missing required parameter: '%s.name'.", at)
			}
			if _, ok := asString(item["arguments"]); !ok {
				return badParam(at+".arguments", "Missing required parameter: '%s.arguments' (a string).", at)
			}
			calls[id] = true
		case "function_call_output":
			id, _ := asString(item["call_id"])
			if id == "" {
				return badParam(at+".call_id", "Missing required parameter: '%s.call_id'.", at)
			}
			if !calls[id] && !chained {
				return badParam("input", "No tool call found for function call output with call_id %s.", id)
			}
			if err := responsesOutput(at, item["output"]); err != nil {
				return err
			}
		case "reasoning":
			id, _ := asString(item["id"])
			if id == "" {
				return badParam(at+".id", "Missing required parameter: '%s.id'.", at)
			}
			summary, ok := asArray(item["summary"])
			if !ok {
				return badParam(at+".summary", "Missing required parameter: '%s.summary'.", at)
			}
			for j, s := range summary {
				part, _ := asObject(s)
				if t, _ := asString(part["type"]); t != "summary_text" {
					return badParam(fmt.Sprintf("%s.summary[%d].type", at, j), "Invalid value: '%v'. Supported values are: 'summary_text'.", part["type"])
				}
				if _, ok := asString(part["text"]); !ok {
					return badParam(fmt.Sprintf("%s.summary[%d].text", at, j), "Missing required parameter: '%s.summary[%d].text'.", at, j)
				}
			}
			if enc, _ := asString(item["encrypted_content"]); enc == "" && !stored {
				return badParam("input", "Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
			}
		case "item_reference":
			if !stored && !chained {
				id, _ := asString(item["id"])
				return badParam("input", "Item with id '%s' not found. Items are not persisted when `store` is set to false.", id)
			}
		case "":
			return badParam(at+".type", "Missing required parameter: '%s.type'.", at)
		}
	}
	return nil
}

func responsesMessage(at string, item map[string]any) error {
	role, _ := asString(item["role"])
	var allowed []string
	switch role {
	case "user", "system", "developer":
		allowed = []string{"input_text", "input_image", "input_file", "input_audio"}
	case "assistant":
		allowed = []string{"output_text", "refusal"}
	default:
		return badParam(at+".role", "Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", role)
	}
	switch c := item["content"].(type) {
	case string:
		return nil
	case []any:
		for j, p := range c {
			part, ok := asObject(p)
			pat := fmt.Sprintf("%s.content[%d]", at, j)
			if !ok {
				return badParam(pat, "Invalid type for '%s': expected an object.", pat)
			}
			typ, _ := asString(part["type"])
			fine := false
			for _, a := range allowed {
				fine = fine || typ == a
			}
			if !fine {
				return badParam(pat+".type", "Invalid value: '%s'. A %s message takes content of types %v.", typ, role, allowed)
			}
			if err := responsesPart(pat, typ, part); err != nil {
				return err
			}
		}
		return nil
	}
	return badParam(at+".content", "Invalid type for '%s.content': expected a string or an array of content parts, but got %s instead.", at, kind(item["content"]))
}

// responsesOutput checks a function_call_output's output: a string or
// a list of input_text, input_image and input_file parts.
func responsesOutput(at string, v any) error {
	switch o := v.(type) {
	case string:
		return nil
	case []any:
		for j, p := range o {
			part, ok := asObject(p)
			pat := fmt.Sprintf("%s.output[%d]", at, j)
			if !ok {
				return badParam(pat, "Invalid type for '%s': expected an object.", pat)
			}
			typ, _ := asString(part["type"])
			switch typ {
			case "input_text", "input_image", "input_file":
			default:
				return badParam(pat+".type", "Invalid value: '%s'. Supported values are: 'input_text', 'input_image', and 'input_file'.", typ)
			}
			if err := responsesPart(pat, typ, part); err != nil {
				return err
			}
		}
		return nil
	}
	return badParam(at+".output", "Invalid type for '%s.output': expected a string or an array of content parts, but got %s instead.", at, kind(v))
}

func responsesPart(at, typ string, part map[string]any) error {
	switch typ {
	case "input_text", "output_text":
		if _, ok := asString(part["text"]); !ok {
			return badParam(at+".text", "Missing required parameter: '%s.text'.", at)
		}
	case "input_image":
		url, _ := asString(part["image_url"])
		file, _ := asString(part["file_id"])
		if url == "" && file == "" {
			return badParam(at, "Invalid '%s': an input_image needs image_url or file_id.", at)
		}
		if _, err := imageDataURL(url); err != nil {
			return &openAIError{param: at + ".image_url", code: "invalid_image_format", msg: "Invalid image: " + err.Error()}
		}
		if d, ok := part["detail"]; ok && d != nil && d != "auto" && d != "low" && d != "high" && d != "original" {
			return badParam(at+".detail", "Invalid value: '%v'. Supported values are: 'low', 'high', 'auto', and 'original'.", d)
		}
	}
	return nil
}
