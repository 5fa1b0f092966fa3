"""boto3 and botocore, offline: the service models (compressed JSON next to botocore's modules)
loaded for an S3 client, a presigned URL signed, and the list of services read."""

import json


def main():
    import boto3

    session = boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        region_name="eu-west-1",
    )
    s3 = session.client("s3")
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "bucket", "Key": "key.txt"}, ExpiresIn=60
    )
    services = session.get_available_services()
    dynamodb = session.client("dynamodb")
    print(json.dumps({
        "url": url.split("?")[0],
        "signed": "Signature=" in url,
        "services": len(services) > 300,
        "has": [name in services for name in ("s3", "ec2", "lambda")],
        "operation": "PutItem" in dynamodb.meta.service_model.operation_names,
    }))
