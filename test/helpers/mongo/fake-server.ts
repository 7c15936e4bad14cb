/**
 * A fake MongoDB server speaking just enough of the wire protocol (OP_QUERY
 * for the driver's handshake, OP_MSG afterwards) for the real driver to
 * connect to it and run the adapter's commands. It records every command as
 * the driver sent it (so tests see what goes on the wire: maxTimeMS, write
 * concern) and answers from a small script; a command can be left
 * unanswered, as a server that stopped responding.
 */
import { createServer, type Server, type Socket } from "node:net";
import { BSON, type Document } from "mongodb";
import { COLLECTIONS } from "../../../src/store/mongo/schema.js";

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

export interface FakeMongo {
  /** `mongodb://127.0.0.1:<port>/<db>?directConnection=true` */
  url(dbName: string): string;
  /** Every command received after the handshake, with its document sequences folded in. */
  commands: Document[];
  /** Commands (by name) left unanswered until `close`. */
  stall: Set<string>;
  /** Commands (by name) whose connection is closed instead of answered, once each. */
  drop: Set<string>;
  /** Answers for a command name, overriding the defaults. */
  answer: Map<string, (cmd: Document) => Document>;
  /** The default answer to `hello`. */
  helloReply(cmd: Document): Document;
  close(): Promise<void>;
}

function hello(): Document {
  return {
    ismaster: true,
    isWritablePrimary: true,
    helloOk: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: 1,
    minWireVersion: 0,
    maxWireVersion: 21,
    ok: 1,
  };
}

/** What an empty, migrated database answers. */
function defaults(cmd: Document, dbName: string): Document {
  const name = Object.keys(cmd)[0] as string;
  const cursor = (firstBatch: Document[], coll: string) => ({
    cursor: { id: 0n, ns: `${dbName}.${coll}`, firstBatch },
    ok: 1,
  });
  switch (name) {
    case "hello":
    case "ismaster":
    case "isMaster":
      return hello();
    case "listCollections":
      return cursor(
        COLLECTIONS.map((c) => ({
          name: c.name,
          type: "collection",
          options: { validator: { $jsonSchema: c.schema } },
        })),
        "$cmd.listCollections",
      );
    case "listIndexes": {
      const spec = COLLECTIONS.find((c) => c.name === cmd.listIndexes);
      return cursor(
        [{ name: "_id_", key: { _id: 1 } }, ...(spec?.indexes ?? [])],
        String(cmd.listIndexes),
      );
    }
    case "find":
    case "aggregate":
      return cursor([], String(cmd[name]));
    case "findAndModify":
      // The event counter is read after its update; everything else before (none yet).
      return cmd.findAndModify === "sequences"
        ? { value: { _id: "event_q", n: 1_000 }, ok: 1 }
        : { value: null, ok: 1 };
    case "update":
      return { n: (cmd.updates as unknown[] | undefined)?.length ?? 0, nModified: 0, ok: 1 };
    default:
      return { ok: 1 };
  }
}

function opReply(requestId: number, doc: Document): Buffer {
  const body = BSON.serialize(doc);
  const header = Buffer.alloc(16 + 20);
  header.writeInt32LE(16 + 20 + body.length, 0);
  header.writeInt32LE(0, 4);
  header.writeInt32LE(requestId, 8);
  header.writeInt32LE(OP_REPLY, 12);
  header.writeInt32LE(0, 16); // responseFlags
  header.writeBigInt64LE(0n, 20); // cursorId
  header.writeInt32LE(0, 28); // startingFrom
  header.writeInt32LE(1, 32); // numberReturned
  return Buffer.concat([header, body]);
}

function opMsg(requestId: number, doc: Document): Buffer {
  const body = BSON.serialize(doc);
  const header = Buffer.alloc(16 + 4 + 1);
  header.writeInt32LE(21 + body.length, 0);
  header.writeInt32LE(0, 4);
  header.writeInt32LE(requestId, 8);
  header.writeInt32LE(OP_MSG, 12);
  header.writeUInt32LE(0, 16); // flagBits
  header.writeUInt8(0, 20); // section kind 0
  return Buffer.concat([header, body]);
}

/** The command of an OP_MSG: its body with each document sequence added as an array. */
function readOpMsg(msg: Buffer): Document {
  let offset = 16 + 4;
  let body: Document = {};
  const sequences: Record<string, Document[]> = {};
  const end = msg.length - ((msg.readUInt32LE(16) & 1) === 1 ? 4 : 0);
  while (offset < end) {
    const kind = msg.readUInt8(offset);
    offset += 1;
    const size = msg.readInt32LE(offset);
    if (kind === 0) {
      body = BSON.deserialize(msg.subarray(offset, offset + size), { useBigInt64: false });
    } else {
      const sectionEnd = offset + size;
      let p = offset + 4;
      const nameEnd = msg.indexOf(0, p);
      const name = msg.toString("utf8", p, nameEnd);
      p = nameEnd + 1;
      const docs: Document[] = [];
      while (p < sectionEnd) {
        const n = msg.readInt32LE(p);
        docs.push(BSON.deserialize(msg.subarray(p, p + n)));
        p += n;
      }
      sequences[name] = docs;
    }
    offset += size;
  }
  return { ...body, ...sequences };
}

export async function startFakeMongo(): Promise<FakeMongo> {
  const commands: Document[] = [];
  const stall = new Set<string>();
  const drop = new Set<string>();
  const answer = new Map<string, (cmd: Document) => Document>();
  const sockets = new Set<Socket>();
  let dbName = "test";

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= buffered.readInt32LE(0)) {
        const size = buffered.readInt32LE(0);
        const msg = buffered.subarray(0, size);
        buffered = buffered.subarray(size);
        const requestId = msg.readInt32LE(4);
        const opCode = msg.readInt32LE(12);
        if (opCode === OP_QUERY) {
          socket.write(opReply(requestId, hello()));
          continue;
        }
        if (opCode !== OP_MSG) continue;
        const cmd = readOpMsg(msg);
        const name = Object.keys(cmd)[0] as string;
        if (name !== "hello" && name !== "ismaster" && name !== "isMaster") commands.push(cmd);
        if (stall.has(name)) continue;
        if (drop.delete(name)) {
          socket.destroy();
          return;
        }
        const reply = answer.get(name)?.(cmd) ?? defaults(cmd, dbName);
        socket.write(opMsg(requestId, reply));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url(name) {
      dbName = name;
      return `mongodb://127.0.0.1:${port}/${name}?directConnection=true`;
    },
    commands,
    stall,
    drop,
    answer,
    helloReply: () => hello(),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
