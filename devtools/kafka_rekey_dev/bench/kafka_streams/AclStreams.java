package dev.rekey.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The Kafka Streams baseline of `rekey bench acl`: the one-family ACL's work as a platform team would write it.
 *
 * <p>Decodes the contact-centre JSON source, keys each event by `orgId:interactionId`, repartitions it, then
 * dedupes by event id and numbers it densely per key in two persistent RocksDB stores, and writes the domain
 * event in Avro with the Confluent wire header and `seq` and `src` headers, stamped with the time it is produced.
 *
 * <p>Arguments: BOOTSTRAP SOURCE OUTPUT APPLICATION_ID STATE_DIR STAMP GUARANTEE SCHEMA_FILE SCHEMA_ID
 * REPARTITION_PARTITIONS COMMIT_INTERVAL_MS. It writes the wall-clock time of its first consumed record to STAMP
 * (seconds, as a decimal) and closes cleanly on SIGTERM.
 */
public final class AclStreams {
    private static final String SEEN = "seen";
    private static final String SEQUENCES = "sequences";

    private AclStreams() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 11) {
            System.err.println("usage: AclStreams BOOTSTRAP SOURCE OUTPUT APPLICATION_ID STATE_DIR STAMP GUARANTEE "
                    + "SCHEMA_FILE SCHEMA_ID REPARTITION_PARTITIONS COMMIT_INTERVAL_MS");
            System.exit(2);
        }
        Schema schema = new Schema.Parser().parse(Files.readString(Path.of(args[7])));
        Properties config = new Properties();
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
        config.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[6]);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(args[10]));
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        config.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        // rekey's producer settings, so both sides batch and compress alike.
        config.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);
        config.put(StreamsConfig.producerPrefix(ProducerConfig.COMPRESSION_TYPE_CONFIG), "lz4");

        Topology topology = topology(args[1], args[2], schema, Integer.parseInt(args[8]), Integer.parseInt(args[9]),
                Path.of(args[5]));
        KafkaStreams streams = new KafkaStreams(topology, config);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }

    static Topology topology(String source, String output, Schema schema, int schemaId, int repartitionPartitions,
            Path stamp) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(SEEN), Serdes.String(), Serdes.String()));
        builder.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(SEQUENCES), Serdes.String(), Serdes.Long()));
        builder.stream(source, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .processValues(() -> new Decode(schema, stamp))
                .filter((key, event) -> event != null)
                .selectKey((key, event) -> event.get("org_id") + ":" + event.get("interaction_id"))
                .repartition(Repartitioned.with(Serdes.String(), avroSerde(schema)).withName("sequencing")
                        .withNumberOfPartitions(repartitionPartitions))
                .process(() -> new Sequence(schema, schemaId), SEEN, SEQUENCES)
                .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
        return builder.build();
    }

    /** The JSON source record as the domain event (sequence 0), or null, logged with its position, if it is not one. */
    static final class Decode implements FixedKeyProcessor<byte[], byte[], GenericRecord> {
        private static final ObjectMapper JSON = new ObjectMapper();
        private final Schema schema;
        private final Schema positionSchema;
        private Path stamp;
        private FixedKeyProcessorContext<byte[], GenericRecord> context;

        Decode(Schema schema, Path stamp) {
            this.schema = schema;
            this.positionSchema = schema.getField("source").schema();
            this.stamp = stamp;
        }

        @Override
        public void init(FixedKeyProcessorContext<byte[], GenericRecord> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<byte[], byte[]> record) {
            if (stamp != null) {
                writeStamp(stamp);
                stamp = null;
            }
            RecordMetadata at = context.recordMetadata().orElseThrow();
            GenericRecord event = null;
            try {
                event = decode(record.value(), at);
            } catch (IOException | RuntimeException error) {
                String why = String.valueOf(error.getMessage()).lines().findFirst().orElse("");
                System.err.println("skipped " + at.topic() + "/" + at.partition() + "/" + at.offset() + ": " + why);
            }
            context.forward(record.withValue(event));
        }

        private GenericRecord decode(byte[] value, RecordMetadata at) throws IOException {
            JsonNode json = JSON.readTree(value);
            GenericRecord event = new GenericData.Record(schema);
            event.put("org_id", required(json, "orgId"));
            event.put("interaction_id", required(json, "interactionId"));
            event.put("event_id", required(json, "eventId"));
            event.put("event_type", required(json, "eventType"));
            JsonNode type = json.get("interactionType");
            event.put("interaction_type", type == null || type.isNull() ? null : type.asText());
            long eventTime = OffsetDateTime.parse(required(json, "timestamp")).toInstant().toEpochMilli();
            event.put("event_time", eventTime);
            event.put("sequence", 0L);
            GenericRecord position = new GenericData.Record(positionSchema);
            position.put("topic", at.topic());
            position.put("partition", at.partition());
            position.put("offset", at.offset());
            event.put("source", position);
            event.put("ordering_token", eventTime);
            event.put("change_op", null);
            JsonNode data = json.get("data");
            event.put("payload", data == null || data.isNull() ? "{}" : JSON.writeValueAsString(data));
            return event;
        }

        private static String required(JsonNode json, String field) {
            JsonNode node = json.get(field);
            if (node == null || !node.isTextual() || node.asText().isEmpty()) {
                throw new IllegalArgumentException(field + " is missing or not a non-empty string");
            }
            return node.asText();
        }

        private static void writeStamp(Path stamp) {
            try {
                Files.writeString(stamp, String.format(Locale.ROOT, "%.3f", System.currentTimeMillis() / 1000.0));
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
        }
    }

    /**
     * Per key: a new event id gets the key's next sequence; the same event id from the same source position (a
     * redelivery) gets its first sequence again; from another position (an upstream duplicate) it is dropped.
     */
    static final class Sequence implements Processor<String, GenericRecord, String, byte[]> {
        private final AvroBinary avro;
        private final byte[] wireHeader;
        private ProcessorContext<String, byte[]> context;
        private KeyValueStore<String, String> seen;
        private KeyValueStore<String, Long> sequences;

        Sequence(Schema schema, int schemaId) {
            this.avro = new AvroBinary(schema);
            this.wireHeader = ByteBuffer.allocate(5).put((byte) 0).putInt(schemaId).array();
        }

        @Override
        public void init(ProcessorContext<String, byte[]> context) {
            this.context = context;
            this.seen = context.getStateStore(SEEN);
            this.sequences = context.getStateStore(SEQUENCES);
        }

        @Override
        public void process(Record<String, GenericRecord> record) {
            GenericRecord event = record.value();
            GenericRecord position = (GenericRecord) event.get("source");
            String src = position.get("topic") + "/" + position.get("partition") + "/" + position.get("offset");
            String seenKey = record.key() + "\u0000" + event.get("event_id");
            String earlier = seen.get(seenKey);
            long sequence;
            if (earlier == null) {
                Long last = sequences.get(record.key());
                sequence = last == null ? 1 : last + 1;
                sequences.put(record.key(), sequence);
                seen.put(seenKey, sequence + " " + src);
            } else {
                int space = earlier.indexOf(' ');
                if (!earlier.substring(space + 1).equals(src)) {
                    return;
                }
                sequence = Long.parseLong(earlier.substring(0, space));
            }
            event.put("sequence", sequence);
            Record<String, byte[]> output = record.withValue(avro.encode(wireHeader, event)).withTimestamp(System.currentTimeMillis());
            output.headers().add("seq", Long.toString(sequence).getBytes(StandardCharsets.UTF_8));
            output.headers().add("src", src.getBytes(StandardCharsets.UTF_8));
            context.forward(output);
        }
    }

    /** Avro binary of the domain event after a prefix (the wire header, or nothing), one buffer reused. */
    static final class AvroBinary {
        private final GenericDatumWriter<GenericRecord> writer;
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream(512);
        private BinaryEncoder encoder;

        AvroBinary(Schema schema) {
            this.writer = new GenericDatumWriter<>(schema);
        }

        byte[] encode(byte[] prefix, GenericRecord event) {
            buffer.reset();
            buffer.writeBytes(prefix);
            encoder = EncoderFactory.get().binaryEncoder(buffer, encoder);
            try {
                writer.write(event, encoder);
                encoder.flush();
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
            return buffer.toByteArray();
        }
    }

    private static final byte[] NO_PREFIX = new byte[0];

    /** Plain Avro binary of the domain event for the repartition topic (no registry: both ends share the schema). */
    static Serde<GenericRecord> avroSerde(Schema schema) {
        AvroBinary avro = new AvroBinary(schema);
        GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(schema);
        Serializer<GenericRecord> serializer = (topic, event) -> avro.encode(NO_PREFIX, event);
        Deserializer<GenericRecord> deserializer = new Deserializer<>() {
            private BinaryDecoder decoder;

            @Override
            public GenericRecord deserialize(String topic, byte[] data) {
                decoder = DecoderFactory.get().binaryDecoder(data, decoder);
                try {
                    return reader.read(null, decoder);
                } catch (IOException error) {
                    throw new UncheckedIOException(error);
                }
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }
}
