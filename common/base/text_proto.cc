#include "common/base/text_proto.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace gnnd {
namespace {

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (error.empty()) error = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ", message);
  }
  std::string error;
};

}  // namespace

absl::Status ParseTextProto(const std::string& text, const std::string& what, google::protobuf::Message* message) {
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) return absl::InvalidArgumentError(absl::StrCat(what, ": ", errors.error));
  return absl::OkStatus();
}

absl::Status SetTextFields(const std::string& text, const std::string& what, google::protobuf::Message* message) {
  std::unique_ptr<google::protobuf::Message> fields(message->New());
  if (absl::Status parsed = ParseTextProto(text, what, fields.get()); !parsed.ok()) return parsed;
  std::vector<const google::protobuf::FieldDescriptor*> named;
  fields->GetReflection()->ListFields(*fields, &named);
  for (const google::protobuf::FieldDescriptor* field : named) message->GetReflection()->ClearField(message, field);
  message->MergeFrom(*fields);
  return absl::OkStatus();
}

}  // namespace gnnd
