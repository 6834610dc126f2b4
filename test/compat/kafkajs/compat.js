'use strict';

// Drives kafkajs against a broker for the Go tests in test/compat. Every result is
// one JSON object per line on stdout; kafkajs's own log goes to stderr. Usage:
//
//   node compat.js admin    BROKERS TOPIC PARTITIONS REPLICATION
//   node compat.js produce  BROKERS TOPIC COUNT COMPRESSION(none|gzip) FIRST_TIMESTAMP_MS
//   node compat.js consume  BROKERS TOPIC GROUP MAX
//   node compat.js groups   BROKERS GROUP TOPIC TIMESTAMP_MS
//   node compat.js secure   BROKERS TOPIC MECHANISM USER PASSWORD CA_FILE|- COUNT
//
// BROKERS is host:port[,host:port...]. consume stops after MAX records, or when its
// stdin closes, and commits each record's offset itself (autoCommit off).

const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes, Partitioners, AssignerProtocol } = require('kafkajs');

const [cmd, brokers, ...args] = process.argv.slice(2);

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function client(id, security) {
  return new Kafka({
    clientId: id,
    brokers: (brokers || '').split(','),
    ...security,
    logLevel: logLevel.WARN,
    logCreator: () => ({ level, log }) => {
      process.stderr.write(`kafkajs ${level} ${JSON.stringify(log)}\n`);
    },
    retry: { retries: 10, initialRetryTime: 100 },
  });
}

function text(buf) {
  return buf === null ? null : buf.toString('utf8');
}

// step runs one call and prints its result, or its error, so that one refused
// call does not hide the others.
async function step(name, fn) {
  try {
    out({ step: name, result: await fn() });
  } catch (err) {
    out({ step: name, error: errorInfo(err) });
  }
}

function errorInfo(err) {
  return {
    name: err && err.name,
    message: String(err && err.message),
    type: err && err.type,
    errors: ((err && err.errors) || []).map((e) => ({ type: e.type, message: e.message })),
  };
}

async function admin(topic, partitions, replication) {
  const a = client('compat-admin').admin();
  await a.connect();
  try {
    const spec = { topic, numPartitions: Number(partitions), replicationFactor: Number(replication) };
    await step('createTopics', () => a.createTopics({
      waitForLeaders: true,
      topics: [{ ...spec, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
    }));
    // kafkajs resolves false when every topic answers TOPIC_ALREADY_EXISTS; Kafka
    // checks existence before anything else in the request.
    await step('createExisting', () => a.createTopics({ topics: [spec] }));
    await step('createExistingTooManyReplicas', () => a.createTopics({ topics: [{ ...spec, replicationFactor: 99 }] }));
    await step('listTopics', () => a.listTopics());
    await step('fetchTopicMetadata', () => a.fetchTopicMetadata({ topics: [topic] }));
    await step('describeConfigs', () => a.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'cleanup.policy'] }],
    }));
    await step('describeCluster', () => a.describeCluster());
  } finally {
    await a.disconnect();
  }
}

async function produce(topic, count, compression, firstTs) {
  const p = client('compat-producer').producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  try {
    const codec = compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
    const messages = [];
    for (let i = 0; i < Number(count); i++) {
      messages.push({
        key: `k${i}`,
        value: `v${i}-${'x'.repeat(i % 50)}`,
        headers: { i: String(i), src: 'kafkajs' },
        timestamp: String(Number(firstTs) + i),
      });
    }
    // Two sends, so that partitions receive more than one batch.
    const half = Math.floor(messages.length / 2);
    for (const part of [messages.slice(0, half), messages.slice(half)]) {
      const res = await p.send({ topic, acks: -1, compression: codec, messages: part });
      for (const r of res) {
        out({ step: 'sent', partition: r.partition, errorCode: r.errorCode, baseOffset: r.baseOffset });
      }
    }
  } finally {
    await p.disconnect();
  }
}

async function consume(topic, group, max) {
  // A short fetch wait: kafkajs heartbeats (and so notices a rebalance) between fetches.
  const c = client('compat-consumer').consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 500 });
  let n = 0;
  let stop;
  const stopped = new Promise((resolve) => { stop = resolve; });
  process.stdin.on('end', () => stop());
  process.stdin.resume();
  c.on(c.events.GROUP_JOIN, (e) => out({ step: 'joined', assignment: e.payload.memberAssignment }));
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  await c.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      // kafkajs goes on with the rest of a batch until disconnect completes; a
      // record past MAX is neither printed nor committed, so the next member of
      // the group gets it.
      if (n >= Number(max)) return;
      const headers = {};
      for (const [k, v] of Object.entries(message.headers || {})) headers[k] = text(v);
      out({
        step: 'message', partition, offset: message.offset, key: text(message.key),
        value: text(message.value), timestamp: message.timestamp, headers,
      });
      await c.commitOffsets([{ topic, partition, offset: String(BigInt(message.offset) + 1n) }]);
      if (++n >= Number(max)) stop();
    },
  });
  await stopped;
  await c.disconnect();
  process.stdin.destroy();
  out({ step: 'done', count: n });
}

async function groups(group, topic, ts) {
  const a = client('compat-admin').admin();
  await a.connect();
  try {
    await step('fetchOffsets', () => a.fetchOffsets({ groupId: group, topics: [topic] }));
    await step('listGroups', () => a.listGroups());
    // Members' metadata and assignments decoded as kafkajs's assigners write them.
    await step('describeGroups', async () => {
      const d = await a.describeGroups([group]);
      for (const g of d.groups) {
        g.members = g.members.map((m) => ({
          memberId: m.memberId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          metadata: m.memberMetadata.length ? AssignerProtocol.MemberMetadata.decode(m.memberMetadata) : null,
          assignment: m.memberAssignment.length ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment).assignment : null,
        }));
      }
      return d;
    });
    await step('fetchTopicOffsets', () => a.fetchTopicOffsets(topic));
    await step('fetchTopicOffsetsByTimestamp', () => a.fetchTopicOffsetsByTimestamp(topic, Number(ts)));
  } finally {
    await a.disconnect();
  }
}

// secure authenticates with SASL (over TLS when caFile is not '-'), produces
// count records and reads them back in a group from the beginning. A refused
// login fails the command (exit 1, an 'error' line with kafkajs's error).
async function secure(topic, mechanism, username, password, caFile, count) {
  const security = {
    sasl: { mechanism: mechanism.toLowerCase(), username, password },
    ssl: caFile === '-' ? false : { ca: [require('fs').readFileSync(caFile, 'utf8')] },
    retry: { retries: 2, initialRetryTime: 100 },
  };
  const kafka = client('compat-secure', security);
  const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  const n = Number(count);
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({ key: `k${i}`, value: `${mechanism}-${i}` });
  }
  for (const r of await p.send({ topic, messages })) {
    out({ step: 'sent', partition: r.partition, errorCode: r.errorCode, baseOffset: r.baseOffset });
  }
  await p.disconnect();
  const c = kafka.consumer({ groupId: `compat-secure-${mechanism}-${process.pid}` });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    c.run({
      eachMessage: async ({ partition, message }) => {
        out({ step: 'message', partition, offset: message.offset, key: text(message.key), value: text(message.value) });
        if (++seen >= n) {
          resolve();
        }
      },
    }).catch(reject);
  });
  await c.disconnect();
  out({ step: 'done', count: seen });
}

const commands = {
  secure: () => secure(...args),
  admin: () => admin(...args),
  produce: () => produce(...args),
  consume: () => consume(...args),
  groups: () => groups(...args),
};

if (!commands[cmd] || !brokers) {
  process.stderr.write('usage: node compat.js admin|produce|consume|groups|secure BROKERS ...\n');
  process.exitCode = 2;
} else {
  commands[cmd]().catch((err) => {
    process.stderr.write(`compat.js ${cmd}: ${err && err.stack ? err.stack : err}\n`);
    out({ step: 'error', error: errorInfo(err) });
    process.exitCode = 1;
    process.stdin.destroy(); // consume reads stdin; let the process end
  });
}
