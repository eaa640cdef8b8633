"""The Kafka Streams baseline of `rekey bench acl`: a Java app (`AclStreams.java`) doing the one-family ACL's
work, built and run by `app`."""
