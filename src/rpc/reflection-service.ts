/**
 * gRPC server reflection (grpc.reflection.v1 and the older v1alpha), so
 * tools discover the API without a copy of proto/: `buf curl` without
 * `--schema`, grpcurl, grpcui, Postman, Kreya. The descriptors are the ones
 * protoc-gen-es embedded in gen/, with every file they import; nothing is
 * read from disk. connect-es has no reflection package (connectrpc/connect-es
 * issue 507), so this is the standard's four lookups over those files.
 */
import { type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import type { ServerReflection as V1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import type { ServerReflection as V1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** The request's lookup, as both versions spell it. */
type Lookup =
  | { case: "fileByFilename"; value: string }
  | { case: "fileContainingSymbol"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: "allExtensionNumbersOfType"; value: string }
  | { case: "listServices"; value: string }
  | { case: undefined; value?: undefined };

/** What both versions can send back (their messages have the same shape). */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | {
      case: "allExtensionNumbersResponse";
      value: { baseTypeName: string; extensionNumber: number[] };
    }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Indexes of the served files, built once. */
function indexFiles(services: DescService[], extraFiles: DescFile[]) {
  const files = new Map<string, DescFile>();
  const addFile = (file: DescFile) => {
    if (files.has(file.name)) return;
    files.set(file.name, file);
    for (const dep of file.dependencies) addFile(dep);
  };
  for (const s of services) addFile(s.file);
  for (const f of extraFiles) addFile(f);

  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  for (const file of files.values()) {
    for (const type of nestedTypes(file)) {
      symbols.set(type.typeName, file);
      if (type.kind === "service") {
        for (const m of type.methods) symbols.set(`${type.typeName}.${m.name}`, file);
      }
      if (type.kind === "extension") {
        const byNumber = extensions.get(type.extendee.typeName) ?? new Map<number, DescFile>();
        byNumber.set(type.number, file);
        extensions.set(type.extendee.typeName, byNumber);
      }
    }
  }
  const bytes = new Map<string, Uint8Array>();
  for (const [name, file] of files)
    bytes.set(name, toBinary(FileDescriptorProtoSchema, file.proto));
  return { files, symbols, extensions, bytes };
}

/**
 * Both reflection services for `services` (the services this server serves,
 * listed in that order). `extraFiles` adds files whose types callers may need,
 * such as google/rpc/error_details.proto for error details.
 */
export function createReflectionServices(
  services: DescService[],
  extraFiles: DescFile[] = [],
): { v1: ServiceImpl<typeof V1>; v1alpha: ServiceImpl<typeof V1alpha> } {
  const index = indexFiles(services, extraFiles);
  const names = services.map((s) => ({ name: s.typeName }));

  /** The file and everything it imports, the asked file first, each once. */
  const withDependencies = (file: DescFile): Answer => {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile) => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      const b = index.bytes.get(f.name);
      if (b) out.push(b);
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
  };
  const notFound = (what: string): Answer => ({
    case: "errorResponse",
    value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
  });

  const answer = (lookup: Lookup): Answer => {
    switch (lookup.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: names } };
      case "fileByFilename": {
        const file = index.files.get(lookup.value);
        return file ? withDependencies(file) : notFound(`file ${lookup.value}`);
      }
      case "fileContainingSymbol": {
        // A leading dot is how descriptors spell fully-qualified names; tools sometimes keep it.
        const name = lookup.value.replace(/^\./, "");
        const file = index.symbols.get(name);
        return file ? withDependencies(file) : notFound(`symbol ${name}`);
      }
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = lookup.value;
        const file = index.extensions.get(containingType)?.get(extensionNumber);
        return file
          ? withDependencies(file)
          : notFound(`extension ${extensionNumber} of ${containingType}`);
      }
      case "allExtensionNumbersOfType": {
        const byNumber = index.extensions.get(lookup.value);
        if (!byNumber && !index.symbols.has(lookup.value)) return notFound(`type ${lookup.value}`);
        return {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: lookup.value, extensionNumber: [...(byNumber?.keys() ?? [])] },
        };
      }
      default:
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "the request names no lookup" },
        };
    }
  };

  const handle = async function* (
    requests: AsyncIterable<{ host: string; messageRequest: Lookup }>,
  ) {
    for await (const req of requests) {
      yield {
        validHost: req.host,
        originalRequest: req,
        messageResponse: answer(req.messageRequest),
      };
    }
  };
  // The two versions differ only in their package name.
  return {
    v1: { serverReflectionInfo: handle } as ServiceImpl<typeof V1>,
    v1alpha: { serverReflectionInfo: handle } as ServiceImpl<typeof V1alpha>,
  };
}
