"""Drives confluent-kafka-python (librdkafka) transactions against a broker for
the Go tests in test/compat. Usage:

    python3 txn.py BROKERS TOPIC COUNT

A transactional producer commits COUNT records "c1-i", aborts COUNT "a1-i" and
commits COUNT "c2-i"; a second producer with the same transactional.id then
fences the first, whose next transaction must fail. read_committed and
read_uncommitted consumers read the topic back. One JSON object per line:
{"step": "committed"|"aborted"|"fenced"|"read"|"error", ...}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def out(**obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def transaction(p, topic, tag, count, commit):
    p.begin_transaction()
    for i in range(count):
        p.produce(topic, value=("%s-%d" % (tag, i)).encode(), partition=0)
    p.flush(15)
    if commit:
        p.commit_transaction(30)
        out(step="committed", tag=tag)
    else:
        p.abort_transaction(30)
        out(step="aborted", tag=tag)


def read(brokers, topic, isolation, want):
    c = Consumer({
        "bootstrap.servers": brokers,
        "group.id": "py-txn-" + isolation,
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    c.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.time() + 30
    while len(values) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            out(step="error", where="consume", error=str(m.error()))
            continue
        values.append(m.value().decode())
    c.close()
    out(step="read", isolation=isolation, values=values)


def main():
    brokers, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conf = {"bootstrap.servers": brokers, "transactional.id": "py-txn", "transaction.timeout.ms": 30000}
    try:
        p = Producer(conf)
        p.init_transactions(30)
        transaction(p, topic, "c1", count, True)
        transaction(p, topic, "a1", count, False)
        transaction(p, topic, "c2", count, True)

        newer = Producer(conf)
        newer.init_transactions(30)
        try:
            transaction(p, topic, "zombie", count, True)
            out(step="error", where="fencing", error="the fenced producer committed")
        except KafkaException as e:
            out(step="fenced", error=str(e.args[0]))
        transaction(newer, topic, "c3", count, True)
    except KafkaException as e:
        out(step="error", where="produce", error=str(e.args[0]))
        sys.exit(1)
    read(brokers, topic, "read_committed", 3 * count)
    read(brokers, topic, "read_uncommitted", 4 * count)


if __name__ == "__main__":
    main()
