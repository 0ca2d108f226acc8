"""JSON Schema for chainkit's typed values, written once for tools and for typed model output.

- `specs`: a Python type (or a pydantic model) as a `Spec`: its JSON schema, and the reading
  of a JSON value back into the type, every problem named by its path
  (`items[2].price: expected number, got "x"`);
- `dict_schema`: a JSON Schema given as a dict, checked as it stands;
- `lenient`: the JSON object in a model's reply, read tolerantly, whole or while it streams;
- `output`: the shape a model's typed result must have, and its reading;
- `partial`: a partial value of a typed result built into the type (fields not there yet
  None).
"""
