"""Drives confluent-kafka-python (librdkafka) against a secured broker for the Go
tests in test/compat. Usage:

    python3 secure.py BROKERS TOPIC PROTOCOL MECHANISM USER PASSWORD CA_FILE|- COUNT

It produces COUNT records, then reads them back in a group from the beginning,
printing one JSON object per line: {"step": "sent"|"message"|"done"|"error", ...}.
A refused login exits 1 after an "error" line.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


def out(**obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    brokers, topic, protocol, mechanism, user, password, ca, count = sys.argv[1:9]
    count = int(count)
    conf = {
        "bootstrap.servers": brokers,
        "security.protocol": protocol,
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    if ca != "-":
        conf["ssl.ca.location"] = ca

    errors = []

    def on_error(err):
        errors.append(err)

    p = Producer({**conf, "error_cb": on_error, "message.timeout.ms": 15000})
    delivered = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered.append(msg)
            out(step="sent", partition=msg.partition(), offset=str(msg.offset()))

    for i in range(count):
        p.produce(topic, key="k%d" % i, value="%s-%d" % (mechanism, i), on_delivery=on_delivery)
    deadline = time.time() + 20
    while len(delivered) < count and time.time() < deadline:
        p.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    if len(delivered) < count:
        out(step="error", error="; ".join(str(e) for e in errors) or "not delivered")
        sys.exit(1)

    c = Consumer({**conf, "group.id": "compat-confluent-%s-%s" % (protocol, mechanism),
                  "auto.offset.reset": "earliest", "error_cb": on_error})
    c.subscribe([topic])
    seen = 0
    deadline = time.time() + 30
    while seen < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        seen += 1
        out(step="message", partition=m.partition(), offset=str(m.offset()),
            key=m.key().decode(), value=m.value().decode())
    c.close()
    if seen < count:
        out(step="error", error="read %d of %d; %s" % (seen, count, "; ".join(str(e) for e in errors)))
        sys.exit(1)
    out(step="done", count=seen)


if __name__ == "__main__":
    main()
