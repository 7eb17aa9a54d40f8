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

// ParseTextProto, recording where each field stands in `locations` (if set).
absl::Status Parse(const std::string& text, const std::string& what, google::protobuf::Message* message,
                   google::protobuf::TextFormat::ParseInfoTree* locations) {
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (locations != nullptr) parser.WriteLocationsTo(locations);
  if (!parser.ParseFromString(text, message)) return absl::InvalidArgumentError(absl::StrCat(what, ": ", errors.error));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseTextProto(const std::string& text, const std::string& what, google::protobuf::Message* message) {
  return Parse(text, what, message, nullptr);
}

absl::Status SetTextFields(const std::string& text, const std::string& what, google::protobuf::Message* message) {
  std::unique_ptr<google::protobuf::Message> fields(message->New());
  google::protobuf::TextFormat::ParseInfoTree named;  // where each field the text names stands
  if (absl::Status parsed = Parse(text, what, fields.get(), &named); !parsed.ok()) return parsed;
  // The text's strings go to gnnd as they are: one that is not UTF-8 would make the whole message unreadable
  // there, so it is refused here, by the same parse.
  if (std::unique_ptr<google::protobuf::Message> check(fields->New());
      !check->ParseFromString(fields->SerializeAsString())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a string is not valid UTF-8"));
  }
  // Every field the text names replaces the message's, its default value too ("no_shuffle: false", "split:
  // \"\""): proto3 keeps no presence for those, so the parser's locations tell which were named; a named
  // field is cleared (its default) and the text's value, if any other, merged in.
  const google::protobuf::Descriptor* type = message->GetDescriptor();
  for (int i = 0; i < type->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type->field(i);
    if (named.GetLocation(field, field->is_repeated() ? 0 : -1).line < 0) continue;
    message->GetReflection()->ClearField(message, field);
  }
  message->MergeFrom(*fields);
  return absl::OkStatus();
}

}  // namespace gnnd
