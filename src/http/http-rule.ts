/** The HTTP verb and path a proto method declares in its google.api.http annotation. */
import { type DescMethod, getOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";

/** The HTTP verb and path of a method's google.api.http rule. */
export function httpRuleOf(method: DescMethod): { verb: "POST" | "GET"; path: string } {
  const rule = getOption(method, http);
  if (rule.pattern.case === "post") return { verb: "POST", path: rule.pattern.value };
  if (rule.pattern.case === "get") return { verb: "GET", path: rule.pattern.value };
  throw new Error(`${method.parent.typeName}.${method.name} has no supported google.api.http rule`);
}

/** A google.api.http path template (`/sites/{site_id}`) as a Fastify route (`/sites/:site_id`). */
export function routeOf(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, ":$1");
}
