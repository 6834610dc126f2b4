'use strict';

// Drives kafkajs against a broker for the Go tests in test/compat. Every result is
// one JSON object per line on stdout; kafkajs's own log goes to stderr. Usage:
//
//   node compat.js admin    BROKERS TOPIC PARTITIONS REPLICATION
//   node compat.js produce  BROKERS TOPIC COUNT COMPRESSION(none|gzip) FIRST_TIMESTAMP_MS
//   node compat.js consume  BROKERS TOPIC GROUP MAX
//   node compat.js groups   BROKERS GROUP TOPIC TIMESTAMP_MS
//   node compat.js secure   BROKERS TOPIC MECHANISM USER PASSWORD CA_FILE|- COUNT
//   node compat.js txn      BROKERS TOPIC TRANSACTIONAL_ID COUNT
//   node compat.js ctp      BROKERS IN OUT GROUP TRANSACTIONAL_ID COUNT
//   node compat.js read     BROKERS TOPIC committed|uncommitted MAX
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


function txnProducer(kafka, transactionalId) {
  return kafka.producer({
    transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 30000,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

function tagged(tag, count) {
  const messages = [];
  for (let i = 0; i < Number(count); i++) messages.push({ value: `${tag}-${i}` });
  return messages;
}

// txn: a transactional producer commits COUNT records "c1-i", aborts "a1-i"
// and commits "c2-i" (partition 0 of TOPIC); it then sends "f1-i" in a new
// transaction when a second producer with the same transactional id
// initializes, which must fence it (its commit fails) and abort "f1-i"; the
// second producer commits "c3-i".
async function txn(topic, transactionalId, count) {
  const kafka = client('compat-txn');
  const first = txnProducer(kafka, transactionalId);
  const second = txnProducer(kafka, transactionalId);
  await first.connect();
  await second.connect();
  try {
    for (const [tag, commit] of [['c1', true], ['a1', false], ['c2', true]]) {
      const t = await first.transaction();
      await t.send({ topic, acks: -1, messages: tagged(tag, count).map((m) => ({ ...m, partition: 0 })) });
      if (commit) {
        await t.commit();
        out({ step: 'committed', tag });
      } else {
        await t.abort();
        out({ step: 'aborted', tag });
      }
    }
    const zombie = await first.transaction();
    await zombie.send({ topic, acks: -1, messages: tagged('f1', count).map((m) => ({ ...m, partition: 0 })) });
    const t = await second.transaction();
    try {
      await zombie.send({ topic, acks: -1, messages: [{ value: 'f1-late', partition: 0 }] });
      await zombie.commit();
      out({ step: 'error', error: { message: 'the fenced producer committed' } });
    } catch (err) {
      out({ step: 'fenced', error: errorInfo(err) });
    }
    await t.send({ topic, acks: -1, messages: tagged('c3', count).map((m) => ({ ...m, partition: 0 })) });
    await t.commit();
    out({ step: 'committed', tag: 'c3' });
  } finally {
    await first.disconnect();
    await second.disconnect();
  }
}

// ctp: consume-transform-produce. A consumer of GROUP reads IN; for each
// record a transaction writes "out-VALUE" to partition 0 of OUT and commits the
// record's next offset for GROUP with it (sendOffsets). The first record's
// transaction is first run with "x-VALUE" and aborted, offsets included.
// After COUNT records the consumer leaves and a last transaction writes
// "x-final" and offsets past the end of every partition read, and is aborted.
async function ctp(inTopic, outTopic, group, transactionalId, count) {
  const kafka = client('compat-ctp');
  const p = txnProducer(kafka, transactionalId);
  const c = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 500 });
  await p.connect();
  await c.connect();
  await c.subscribe({ topic: inTopic, fromBeginning: true });
  let n = 0;
  let aborted = 0;
  const partitions = new Set();
  let stop;
  let fail;
  const stopped = new Promise((resolve, reject) => { stop = resolve; fail = reject; });
  const once = async (partition, message, prefix, commit) => {
    const t = await p.transaction();
    try {
      await t.send({ topic: outTopic, acks: -1, messages: [{ value: `${prefix}-${text(message.value)}`, partition: 0 }] });
      await t.sendOffsets({
        consumerGroupId: group,
        topics: [{ topic: inTopic, partitions: [{ partition, offset: String(BigInt(message.offset) + 1n) }] }],
      });
    } catch (err) {
      await t.abort();
      throw err;
    }
    await (commit ? t.commit() : t.abort());
  };
  await c.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (n >= Number(count)) return;
      partitions.add(partition);
      try {
        if (n === 0) {
          await once(partition, message, 'x', false);
          aborted++;
        }
        await once(partition, message, 'out', true);
      } catch (err) {
        fail(err);
        return;
      }
      if (++n >= Number(count)) stop();
    },
  });
  try {
    await stopped;
    await c.disconnect();
    // Offsets far past the end in an aborted transaction: the group must
    // keep the committed ones.
    const t = await p.transaction();
    await t.send({ topic: outTopic, acks: -1, messages: [{ value: 'x-final', partition: 0 }] });
    await t.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic: inTopic, partitions: [...partitions].map((partition) => ({ partition, offset: '1000000' })) }],
    });
    await t.abort();
    aborted++;
  } finally {
    await c.disconnect();
    await p.disconnect();
  }
  out({ step: 'done', count: n, aborted });
}

// read: a consumer of its own group with readUncommitted as asked reads TOPIC
// from the start until MAX records or 30 s have gone, and prints their values
// (in order per partition).
async function read(topic, isolation, max) {
  const c = client('compat-read').consumer({
    groupId: `compat-read-${isolation}-${process.pid}`,
    readUncommitted: isolation === 'uncommitted',
    maxWaitTimeInMs: 500,
  });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  const values = [];
  let stop;
  const stopped = new Promise((resolve) => { stop = resolve; });
  const timer = setTimeout(() => stop(), 30000);
  await c.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (values.length >= Number(max)) return;
      values.push({ partition, offset: message.offset, value: text(message.value) });
      if (values.length >= Number(max)) stop();
    },
  });
  await stopped;
  clearTimeout(timer);
  await c.disconnect();
  out({ step: 'read', isolation, result: values });
}

const commands = {
  secure: () => secure(...args),
  admin: () => admin(...args),
  produce: () => produce(...args),
  consume: () => consume(...args),
  groups: () => groups(...args),
  txn: () => txn(...args),
  ctp: () => ctp(...args),
  read: () => read(...args),
};

if (!commands[cmd] || !brokers) {
  process.stderr.write('usage: node compat.js admin|produce|consume|groups|secure|txn|ctp|read BROKERS ...\n');
  process.exitCode = 2;
} else {
  commands[cmd]().catch((err) => {
    process.stderr.write(`compat.js ${cmd}: ${err && err.stack ? err.stack : err}\n`);
    out({ step: 'error', error: errorInfo(err) });
    process.exitCode = 1;
    process.stdin.destroy(); // consume reads stdin; let the process end
  });
}
