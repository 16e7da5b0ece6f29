DROP TABLE change_subscribers;
